#!/usr/bin/env python3
"""Recall-quality benchmark of tree-ring against BM25 and SQLite FTS5.

Corpus (public text, offline): three fifths the docstrings of this machine's
Python standard library, a memory per documented function, class or method
(the docstring's first paragraph is the summary, the rest, cut at 400
characters, the details; the module is the tag; source ref "python-doc"), and
two fifths Debian package synopses from the apt lists (a one-line summary, the
section as tag, source ref "debian-package"). Queries are generated from the text of one target memory each,
before and independently of any ranking (the label is the memory the words
were drawn from), in three styles:

  keywords        2-4 content words of the target, some inflected (plural,
                  -ed, -ing dropped or added), sometimes with one unrelated
                  word, all memories created at the same instant;
  keywords-dated  the same queries over the same memories with creation
                  dates spread uniformly over 90 days;
  prompt          the same words in a natural-language request with the
                  usual stop words ("how do i ...", "what is the way to ...").

Baselines, computed in the same run over the same text (summary, details,
tags, source ref): BM25 (k1 1.5, b 0.75, unicode61-like tokens), SQLite FTS5
with the OR of the query's terms ranked by bm25(), and FTS5 with the porter
tokenizer. tree-ring's ranking runs in the Go tool next to this script
(main.go: the recall projection folded in memory, recall.Recall).

Usage:
  bench.py [--memories 3000] [--queries 400] [--out DIR]     full run, prints the table
  bench.py --fixture FILE [--memories 300] [--queries 120]    writes the Go test's fixture

Everything is seeded: the same Python version gives the same data.
"""

import argparse
import importlib
import inspect
import json
import math
import os
import random
import re
import sqlite3
import subprocess
import sys
import tempfile
import warnings

SEED = 25
STOP = set("""a about above after again against all also an and any are as at be because been before being below
between both but by can could did do does doing down during each either else few for from further had has have
having he her here hers him his how i if in into is it its itself just may me might more most must my no nor not
now of off on once one only or other our out over own same shall she should so some such than that the their them
then there these they this those through to too under until up upon us use used using very via was we were what
when where whether which while who whom why will with within without would yes yet you your none true false self
return returns given new object value""".split())

SKIP_MODULES = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "pydoc_data", "lib2to3",
                "ensurepip", "venv", "__main__", "xxsubtype", "xxlimited", "xxlimited_35", "_xxtestfuzz", "test"}

WORD = re.compile(r"[A-Za-z][a-z]{2,}")
TOKEN = re.compile(r"[^\W_]+")


def clean(s):
    return " ".join(s.split())


def harvest():
    """Every public documented callable of the standard library, deduplicated by text."""
    warnings.simplefilter("ignore")
    seen, out = set(), []
    for name in sorted(sys.stdlib_module_names):
        if name.startswith("_") or name in SKIP_MODULES:
            continue
        try:
            mod = importlib.import_module(name)
        except Exception:  # platform modules, optional dependencies
            continue
        objs = []
        for an, obj in sorted(vars(mod).items()):
            if an.startswith("_") or getattr(obj, "__module__", name) != name:
                continue
            if inspect.isclass(obj):
                objs.append((f"{name}.{an}", obj))
                for mn, m in sorted(vars(obj).items()):
                    if not mn.startswith("_") and callable(m):
                        objs.append((f"{name}.{an}.{mn}", m))
            elif callable(obj):
                objs.append((f"{name}.{an}", obj))
        for qual, obj in objs:
            doc = inspect.getdoc(obj) or ""
            if not isinstance(doc, str):
                continue
            paras = [clean(p) for p in doc.split("\n\n") if p.strip()]
            if not paras:
                continue
            summary, details = paras[0][:300], clean(" ".join(paras[1:]))[:400]
            words = set(w.lower() for w in WORD.findall(summary + " " + details)) - STOP
            if len(words) < 6 or summary in seen:
                continue
            seen.add(summary)
            out.append({"qual": qual, "module": name, "summary": summary, "details": details, "ref": "python-doc"})
    return out


def harvest_debian():
    """Debian package synopses (the apt lists of this machine): short, one-line memories."""
    lists = "/var/lib/apt/lists"
    files = sorted(f for f in os.listdir(lists) if f.endswith("_main_binary-amd64_Packages.lz4"))
    out, seen = [], set()
    for fn in files:
        raw = subprocess.run(["lz4cat", os.path.join(lists, fn)], check=True, capture_output=True, text=True).stdout
        for stanza in raw.split("\n\n"):
            f = dict(re.findall(r"^([A-Za-z-]+): (.*)$", stanza, re.M))
            summary = clean(f.get("Description", ""))
            words = set(w.lower() for w in WORD.findall(summary)) - STOP
            if len(words) < 3 or summary.lower() in seen:
                continue
            seen.add(summary.lower())
            out.append({"qual": f["Package"], "module": f.get("Section", "misc").split("/")[-1], "summary": summary,
                        "details": "", "ref": "debian-package"})
    return out


def inflect(w):
    if w.endswith("ing") and len(w) > 6:
        return w[:-3]
    if w.endswith("ed") and len(w) > 5:
        return w[:-2]
    if w.endswith("s") and len(w) > 4:
        return w[:-1]
    return w + "s"


PROMPTS = ["how do i {0}", "how do i use the {0}", "what is the way to {0}?", "is there something that can {0}",
           "i need to {0}, how can i do that", "can you show me how to {0}", "what should i use for {0}?",
           "where is the thing that does {0}"]


def make_queries(mems, n, rng):
    pool = [w for m in mems for w in sorted(set(WORD.findall(m["summary"].lower())) - STOP)]
    qs = []
    for target in rng.sample(range(len(mems)), n):
        m = mems[target]
        summ = sorted(set(w.lower() for w in WORD.findall(m["summary"])) - STOP)
        det = sorted(set(w.lower() for w in WORD.findall(m["details"])) - STOP - set(summ))
        cand = summ * 2 + det  # people remember the gist (the summary) best
        k = rng.choice([2, 3, 3, 4])
        words = []
        while len(words) < k and cand:
            w = rng.choice(cand)
            cand = [c for c in cand if c != w]
            words.append(inflect(w) if rng.random() < 0.25 else w)
        if rng.random() < 0.2:
            words.insert(rng.randrange(len(words) + 1), rng.choice(pool))
        kw = " ".join(words)
        qs.append({"target": target, "keywords": kw, "prompt": rng.choice(PROMPTS).format(kw)})
    return qs


def build(nmem, nq, seed=SEED):
    rng = random.Random(seed)
    py, deb = harvest(), harvest_debian()
    npy = min(len(py), nmem * 3 // 5)
    mems = rng.sample(py, npy) + rng.sample(deb, nmem - npy)
    rng.shuffle(mems)
    for i, m in enumerate(mems):
        m["id"] = f"mem_{i:05d}"
        m["tags"] = [m["module"].split(".")[0]]
        m["age_minutes"] = rng.randrange(90 * 24 * 60)  # keywords-dated only
    return mems, make_queries(mems, nq, rng)


def doc_text(m):
    return " ".join([m["summary"], m["details"], " ".join(m["tags"]), m["ref"]])


# ---------------------------------------------------------------- baselines

def bm25_rankings(mems, queries, k1=1.5, b=0.75):
    docs = [TOKEN.findall(doc_text(m).lower()) for m in mems]
    N = len(docs)
    avgdl = sum(map(len, docs)) / N
    df, tfs = {}, []
    for d in docs:
        tf = {}
        for t in d:
            tf[t] = tf.get(t, 0) + 1
        tfs.append(tf)
        for t in tf:
            df[t] = df.get(t, 0) + 1
    post = {}
    for i, tf in enumerate(tfs):
        for t in tf:
            post.setdefault(t, []).append(i)
    out = []
    for q in queries:
        sc = {}
        for t in sorted(set(TOKEN.findall(q.lower()))):
            if t not in df:
                continue
            idf = math.log(1 + (N - df[t] + 0.5) / (df[t] + 0.5))
            for i in post[t]:
                f = tfs[i][t]
                sc[i] = sc.get(i, 0) + idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(docs[i]) / avgdl))
        out.append([i for i, _ in sorted(sc.items(), key=lambda x: (-x[1], x[0]))[:10]])
    return out


def fts_rankings(mems, queries, tokenizer):
    db = sqlite3.connect(":memory:")
    db.execute(f"create virtual table m using fts5(summary, details, tags, ref, tokenize='{tokenizer}')")
    db.executemany("insert into m(rowid, summary, details, tags, ref) values (?,?,?,?,?)",
                   [(i, m["summary"], m["details"], " ".join(m["tags"]), m["ref"]) for i, m in enumerate(mems)])
    out = []
    for q in queries:
        terms = sorted(set(TOKEN.findall(q.lower())))
        if not terms:
            out.append([])
            continue
        expr = " OR ".join('"%s"' % t for t in terms)
        rows = db.execute("select rowid from m where m match ? order by bm25(m), rowid limit 10", (expr,)).fetchall()
        out.append([r[0] for r in rows])
    return out


def treering_rankings(mems, queries, dated, workdir):
    mf, qf = os.path.join(workdir, "memories.jsonl"), os.path.join(workdir, "queries.jsonl")
    with open(mf, "w") as f:
        for m in mems:
            f.write(json.dumps({"id": m["id"], "summary": m["summary"], "details": m["details"], "tags": m["tags"],
                                "ref": m["ref"], "age_minutes": m["age_minutes"] if dated else 0}) + "\n")
    with open(qf, "w") as f:
        for q in queries:
            f.write(json.dumps(q) + "\n")
    here = os.path.dirname(os.path.abspath(__file__))
    res = subprocess.run(["go", "run", ".", "-memories", mf, "-queries", qf, "-limit", "10"], cwd=here,
                         check=True, capture_output=True, text=True)
    index = {m["id"]: i for i, m in enumerate(mems)}
    return [[index[x] for x in json.loads(line)] for line in res.stdout.splitlines()]


# ---------------------------------------------------------------- metrics

def rank_of(ranking, target):
    return ranking.index(target) + 1 if target in ranking[:10] else None


METRICS = {
    "R@5": lambda r: 1.0 if r and r <= 5 else 0.0,
    "R@10": lambda r: 1.0 if r else 0.0,
    "MRR@10": lambda r: 1.0 / r if r else 0.0,
    "nDCG@10": lambda r: 1.0 / math.log2(r + 1) if r else 0.0,
}


def per_query(rankings, targets):
    ranks = [rank_of(rk, t) for rk, t in zip(rankings, targets)]
    return {k: [f(r) for r in ranks] for k, f in METRICS.items()}


def paired_interval(a, b, rng, n=2000):
    """95% bootstrap interval (over queries) of mean(a) - mean(b)."""
    k = len(a)
    diffs = []
    for _ in range(n):
        idx = [rng.randrange(k) for _ in range(k)]
        diffs.append(sum(a[i] - b[i] for i in idx) / k)
    diffs.sort()
    return diffs[int(0.025 * n)], diffs[int(0.975 * n) - 1]


def run(args):
    mems, queries = build(args.memories, args.queries)
    targets = [q["target"] for q in queries]
    rng = random.Random(SEED + 1)
    work = args.out or tempfile.mkdtemp(prefix="recallbench-")
    os.makedirs(work, exist_ok=True)
    styles = [("keywords", "keywords", False), ("keywords-dated", "keywords", True), ("prompt", "prompt", False)]
    print(f"corpus: Python {sys.version.split()[0]} standard-library docstrings and Debian package synopses; {len(mems)} memories, "
          f"{len(queries)} queries per style, one relevant memory each\n")
    print("| style | system | R@5 | R@10 | MRR@10 | nDCG@10 |")
    print("|---|---|---|---|---|---|")
    diffs = []
    for style, field, dated in styles:
        texts = [q[field] for q in queries]
        systems = {
            "tree-ring": treering_rankings(mems, queries if field == "keywords" else
                                           [dict(q, keywords=q["prompt"]) for q in queries], dated, work),
            "BM25": bm25_rankings(mems, texts),
            "FTS5 OR": fts_rankings(mems, texts, "unicode61"),
            "FTS5 porter": fts_rankings(mems, texts, "porter unicode61"),
        }
        pq = {s: per_query(r, targets) for s, r in systems.items()}
        for s in systems:
            print(f"| {style} | {s} | " + " | ".join(f"{sum(v) / len(v):.3f}" for v in pq[s].values()) + " |")
        for s in ["BM25", "FTS5 OR", "FTS5 porter"]:
            row = []
            for k in METRICS:
                lo, hi = paired_interval(pq["tree-ring"][k], pq[s][k], rng)
                d = (sum(pq["tree-ring"][k]) - sum(pq[s][k])) / len(targets)
                row.append(f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]")
            diffs.append(f"| {style} | tree-ring − {s} | " + " | ".join(row) + " |")
    print("\npaired differences, 95% bootstrap intervals over queries (2,000 resamples):\n")
    print("| style | difference | R@5 | R@10 | MRR@10 | nDCG@10 |")
    print("|---|---|---|---|---|---|")
    print("\n".join(diffs))


def fixture(args):
    mems, queries = build(args.memories, args.queries)
    out = {"memories": [{k: m[k] for k in ("id", "summary", "details", "tags", "ref", "age_minutes")} for m in mems],
           "queries": [{"target": mems[q["target"]]["id"], "keywords": q["keywords"], "prompt": q["prompt"]}
                       for q in queries]}
    with open(args.fixture, "w") as f:  # one memory or query a line: small diffs
        for i, k in enumerate(("memories", "queries")):
            f.write(("{" if i == 0 else ",\n") + json.dumps(k) + ": [\n")
            f.write(",\n".join(json.dumps(x, sort_keys=True) for x in out[k]))
            f.write("\n]")
        f.write("}\n")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--memories", type=int)
    p.add_argument("--queries", type=int)
    p.add_argument("--out", help="work directory for the generated files (default: a new temporary one)")
    p.add_argument("--fixture", help="write the small fixture of the Go test to this file and stop")
    a = p.parse_args()
    if a.fixture:
        a.memories, a.queries = a.memories or 300, a.queries or 120
        fixture(a)
    else:
        a.memories, a.queries = a.memories or 3000, a.queries or 400
        run(a)
