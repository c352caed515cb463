#!/usr/bin/env python3
# Same-run, interleaved A/B of whole tree-ring builds on the user-visible
# metrics: the codex SessionStart hook through its installed command line
# (sh -c, from src/deep, PATH=/usr/bin:/bin, 10,000 memories in the
# ledger), `tree-ring import` of 10,000 memories into a fresh store and
# `tree-ring projections rebuild` of it. Every round runs every build in a
# random order; medians of wall time and of CPU time (user+sys of the
# build's processes, the stable figure on a loaded machine).
#
#	git archive <commit> | tar -x -C /tmp/a && (cd /tmp/a && go build -o /tmp/bin/A ./cmd/tree-ring)
#	python3 docs/bench-ab.py ROUNDS /tmp/bin/A /tmp/bin/B ...
#
# Hooks: ROUNDS*60 per build; imports and rebuilds: ROUNDS per build.
# Work files go under /tmp/ab/run (removed first).
import resource, json, os, subprocess, sys, time, statistics, shutil, random
rounds=int(sys.argv[1]); bins=sys.argv[2:]
base='/tmp/ab/run'; shutil.rmtree(base, ignore_errors=True); os.makedirs(base)
env={'PATH':'/usr/bin:/bin','HOME':base}
def mems(path, alias, n=10000):
    now=time.time()-48*3600
    with open(path,'w') as f:
        for i in range(n):
            t=time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(now+i))+'.000000Z'
            m={'id':'mem_%s_%012x'%(time.strftime('%Y%m%d_%H%M%S',time.gmtime(now)),i),'created_at':t,'updated_at':t,
               'project':alias,'scope':'project','ring':'cambium','event_type':'lesson',
               'summary':'Implementation note %d for subsystem %d.'%(i,i%17),'source':{'type':'agent','ref':'bench:%d'%i},
               'tags':['bench'],'salience':0.5+(i%50)/100,'confidence':0.7,'sensitivity':'normal','retention':'durable'}
            if i%50==0: m['ring'],m['event_type'],m['summary']='scar','warning','Avoid stale deployment rollback cache failure %d.'%i
            if i%10==1: m['scope'],m['agent_profile']='agent','codex'
            f.write(json.dumps({'type':'memory_event','memory':m})+'\n')
def proj(name):
    d=os.path.join(base,name,'proj'); os.makedirs(os.path.join(d,'src','deep')); os.makedirs(os.path.join(d,'.codex'))
    subprocess.run(['git','init','-q',d],check=True); return d
res={b:{'import':[],'rebuild':[],'hook':[],'import_cpu':[],'rebuild_cpu':[],'hook_cpu':[]} for b in bins}
def cpu():
    r=resource.getrusage(resource.RUSAGE_CHILDREN); return r.ru_utime+r.ru_stime
setups={}
for b in bins:
    d=proj(os.path.basename(b))
    subprocess.run([b,'init'],cwd=d,env=env,check=True,capture_output=True)
    line=json.load(open(os.path.join(d,'.codex','hooks.json')))['hooks']['SessionStart'][0]['hooks'][0]['command']
    setups[b]=(d,line)
# import: fresh project per round, interleaved
alias=None
for r in range(rounds):
    order=bins[:]; random.shuffle(order)
    for b in order:
        d=proj('%s-imp%d'%(os.path.basename(b),r))
        subprocess.run([b,'init'],cwd=d,env=env,check=True,capture_output=True)
        f=os.path.join(d,'m.jsonl'); mems(f, os.path.basename(d))
        c=cpu(); t=time.perf_counter(); subprocess.run([b,'import',f],cwd=d,env=env,check=True,capture_output=True); res[b]['import'].append(time.perf_counter()-t); res[b]['import_cpu'].append(cpu()-c)
        c=cpu(); t=time.perf_counter(); subprocess.run([b,'projections','rebuild'],cwd=d,env=env,check=True,capture_output=True); res[b]['rebuild'].append(time.perf_counter()-t); res[b]['rebuild_cpu'].append(cpu()-c)
# hook project seeded with 10k memories
for b in bins:
    d,_=setups[b]; f=os.path.join(d,'m.jsonl'); mems(f, 'proj')
    subprocess.run([b,'import',f],cwd=d,env=env,check=True,capture_output=True); os.remove(f)
n=rounds*60
for i in range(n):
    order=bins[:]; random.shuffle(order)
    for b in order:
        d,line=setups[b]
        p=json.dumps({'session_id':'bench-%d'%i,'transcript_path':'/t.jsonl','cwd':os.path.join(d,'src','deep'),'hook_event_name':'SessionStart','model':'gpt-5.5','permission_mode':'default','source':'startup'})
        c=cpu(); t=time.perf_counter(); out=subprocess.run(['/bin/sh','-c',line],cwd=os.path.join(d,'src','deep'),env=env,input=p.encode(),capture_output=True); el=time.perf_counter()-t; res[b]['hook_cpu'].append(cpu()-c)
        if not out.stdout.startswith(b'{"hookSpecificOutput":'): print('bad hook', b, out.stdout[:200], out.stderr[:300]); sys.exit(1)
        res[b]['hook'].append(el)
print('load', open('/proc/loadavg').read().strip())
for k in ['hook','hook_cpu','import','import_cpu','rebuild','rebuild_cpu']:
    print(k, ' '.join('%s=%.3fms(n=%d)'%(os.path.basename(b), statistics.median(res[b][k])*1000, len(res[b][k])) for b in bins))
