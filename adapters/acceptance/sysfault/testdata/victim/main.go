// Command victim is the program the sysfault tests trace. Its modes:
//
//	victim sync DIR N      create, write and fsync N files in DIR, the ith
//	                       on the (i mod 3)th of three OS threads, in order,
//	                       then rename each to DIR/final-i; prints one line
//	                       per step: "<step> <i> ok" or "<step> <i> <error>"
//	victim spawn DIR N     run "victim sync DIR N" as a child, then exit
//	                       with its status
//	victim echo            print the length of stdin, exit 3
//	victim sleep           sleep for an hour
package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"
)

func main() {
	switch os.Args[1] {
	case "sync":
		n, _ := strconv.Atoi(os.Args[3])
		syncFiles(os.Args[2], n)
	case "spawn":
		c := exec.Command(os.Args[0], "sync", os.Args[2], os.Args[3])
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		if err := c.Run(); err != nil {
			fmt.Println("child:", err)
			os.Exit(1)
		}
	case "echo":
		b, _ := io.ReadAll(os.Stdin)
		fmt.Println(len(b))
		os.Exit(3)
	case "sleep":
		time.Sleep(time.Hour)
	}
}

// syncFiles hands the work from thread to thread, so that consecutive
// fsyncs come from different OS threads.
func syncFiles(dir string, n int) {
	const threads = 3
	turns := make([]chan int, threads)
	for i := range turns {
		turns[i] = make(chan int)
	}
	done := make(chan struct{})
	for w := range threads {
		go func() {
			runtime.LockOSThread()
			for i := range turns[w] {
				step(dir, i)
				if i+1 == n {
					close(done)
					continue
				}
				turns[(i+1)%threads] <- i + 1
			}
		}()
	}
	turns[0] <- 0
	<-done
	for i := range n {
		err := os.Rename(filepath.Join(dir, "f"+strconv.Itoa(i)), filepath.Join(dir, "final-"+strconv.Itoa(i)))
		report("rename", i, err)
	}
}

func step(dir string, i int) {
	f, err := os.OpenFile(filepath.Join(dir, "f"+strconv.Itoa(i)), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
	report("create", i, err)
	if err != nil {
		return
	}
	defer f.Close()
	_, err = f.Write([]byte("data"))
	report("write", i, err)
	report("fsync", i, f.Sync())
}

func report(what string, i int, err error) {
	if err != nil {
		fmt.Println(what, i, err)
		return
	}
	fmt.Println(what, i, "ok")
}
