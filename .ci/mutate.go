//go:build ignore

// Mutate is the mutation habit: it makes small semantic changes (one at a
// time) to the non-test Go files of the packages named, runs each
// package's tests against every change, and lists the changes no test
// caught. Not a CI gate (it runs the tests once per change); run it on
// what a change touches before stopping:
//
//	go run .ci/mutate.go [-base REV] [-max N] [-seed S] [-run REGEX] [-timeout D] DIR...
//
// DIR is a package directory (./apf, kube/endpointslice, ...), or one
// .go file of a package; the package's tests run in the module that holds
// it. With -base only the lines added or
// changed since REV are mutated. The mutations: each comparison flipped
// to its neighbour (< and <=, > and >=, == and !=), && and || swapped, +
// and - swapped between operands, true and false swapped. A change that
// does not compile is not counted. With -max, N changes drawn at random
// (seeded) from all of them. The files are restored after each run, and
// on an interrupt.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"go/scanner"
	"go/token"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// mutant is one change: the bytes [off, off+len(from)) of file become to.
type mutant struct {
	file, pkg string
	off, line int
	from, to  string
}

var swaps = map[token.Token]string{
	token.LSS: "<=", token.LEQ: "<", token.GTR: ">=", token.GEQ: ">",
	token.EQL: "!=", token.NEQ: "==", token.LAND: "||", token.LOR: "&&",
	token.ADD: "-", token.SUB: "+",
}

func main() {
	base := flag.String("base", "", "mutate only the lines changed since this git revision")
	maxN := flag.Int("max", 0, "at most this many mutants, drawn at random (0: all)")
	seed := flag.Uint64("seed", 1, "seed of the draw")
	run := flag.String("run", "", "go test -run of the tests to run")
	timeout := flag.Duration("timeout", 3*time.Minute, "go test -timeout of one run")
	flag.Parse()
	var all []mutant
	for _, dir := range flag.Args() {
		ms, err := mutants(dir, *base)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mutate:", err)
			os.Exit(2)
		}
		all = append(all, ms...)
	}
	if *maxN > 0 && len(all) > *maxN {
		r := rand.New(rand.NewPCG(*seed, 0))
		r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		all = all[:*maxN]
	}
	os.Exit(report(all, *run, *timeout))
}

// report runs every mutant and prints one line each and the score; it
// returns 1 if any survived.
func report(all []mutant, run string, timeout time.Duration) int {
	caught, survived, skipped := 0, 0, 0
	for i, m := range all {
		res, err := try(m, run, timeout)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mutate:", err)
			return 2
		}
		switch res {
		case "caught":
			caught++
		case "survived":
			survived++
		default:
			skipped++
		}
		fmt.Printf("%d/%d %-10s %s:%d %q -> %q\n", i+1, len(all), res, m.file, m.line, m.from, m.to)
	}
	score := 0.0
	if caught+survived > 0 {
		score = float64(caught) / float64(caught+survived)
	}
	fmt.Printf("caught %d, survived %d, not compiling %d: score %.2f\n", caught, survived, skipped, score)
	if survived > 0 {
		return 1
	}
	return 0
}

// mutants lists the mutants of the non-test files of dir, or of the one
// file dir names (lines changed since base only, when base is set).
func mutants(dir, base string) ([]mutant, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if strings.HasSuffix(dir, ".go") { // one file of its package
		files, dir = []string{dir}, filepath.Dir(dir)
	}
	if err != nil {
		return nil, err
	}
	var out []mutant
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		lines := map[int]bool(nil)
		if base != "" {
			if lines, err = changedLines(f, base); err != nil {
				return nil, err
			}
		}
		out = append(out, fileMutants(f, dir, src, lines)...)
	}
	return out, nil
}

// fileMutants scans src for the tokens swaps and true/false name, on
// lines (all when nil).
func fileMutants(file, pkg string, src []byte, lines map[int]bool) []mutant {
	fset := token.NewFileSet()
	tf := fset.AddFile(file, -1, len(src))
	var s scanner.Scanner
	s.Init(tf, src, nil, 0)
	var out []mutant
	prev := token.ILLEGAL
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		off, line := tf.Offset(pos), tf.Line(pos)
		if lines != nil && !lines[line] {
			prev = tok
			continue
		}
		to, ok := swaps[tok]
		// + and - only between operands: after an identifier, a literal
		// or a closing bracket (not a unary sign).
		if (tok == token.ADD || tok == token.SUB) && !operand(prev) {
			ok = false
		}
		if tok == token.IDENT && (lit == "true" || lit == "false") {
			to, ok = map[string]string{"true": "false", "false": "true"}[lit], true
		}
		if ok {
			out = append(out, mutant{file: file, pkg: pkg, off: off, line: line, from: tokText(tok, lit), to: to})
		}
		prev = tok
	}
}

func operand(t token.Token) bool {
	switch t {
	case token.IDENT, token.INT, token.FLOAT, token.RPAREN, token.RBRACK, token.RBRACE:
		return true
	}
	return false
}

func tokText(t token.Token, lit string) string {
	if lit != "" {
		return lit
	}
	return t.String()
}

var hunk = regexp.MustCompile(`^@@ -\S+ \+(\d+)(?:,(\d+))? @@`)

// changedLines returns the lines of file added or changed since base.
func changedLines(file, base string) (map[int]bool, error) {
	out, err := exec.Command("git", "diff", "-U0", base, "--", file).Output()
	if err != nil {
		return nil, fmt.Errorf("git diff %s -- %s: %w", base, file, err)
	}
	lines := map[int]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		m := hunk.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		start, _ := strconv.Atoi(m[1])
		n := 1
		if m[2] != "" {
			n, _ = strconv.Atoi(m[2])
		}
		for i := range n {
			lines[start+i] = true
		}
	}
	return lines, nil
}

// try applies m, runs its package's tests and restores the file:
// "caught", "survived" or "not compiling".
func try(m mutant, run string, timeout time.Duration) (string, error) {
	orig, err := os.ReadFile(m.file)
	if err != nil {
		return "", err
	}
	mutated := append(append(append([]byte{}, orig[:m.off]...), m.to...), orig[m.off+len(m.from):]...)
	if err := os.WriteFile(m.file, mutated, 0o644); err != nil {
		return "", err
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	defer signal.Stop(stop)
	go func() {
		if _, ok := <-stop; ok {
			_ = os.WriteFile(m.file, orig, 0o644)
			os.Exit(130)
		}
	}()
	defer os.WriteFile(m.file, orig, 0o644)
	moddir, rel, err := module(m.pkg)
	if err != nil {
		return "", err
	}
	args := []string{"test", "-count=1", "-failfast", "-vet=off", "-timeout", timeout.String()}
	if run != "" {
		args = append(args, "-run", run)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append(args, rel)...)
	cmd.Dir = moddir
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	switch err := cmd.Run(); {
	case err == nil:
		return "survived", nil
	case strings.Contains(buf.String(), "[build failed]") || strings.Contains(buf.String(), "[setup failed]"):
		return "not compiling", nil
	}
	return "caught", nil
}

// module returns the directory of the module holding dir and dir's
// package path relative to it (./x/y).
func module(dir string) (moddir, rel string, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			r, err := filepath.Rel(d, abs)
			return d, "./" + filepath.ToSlash(r), err
		}
		if d == filepath.Dir(d) {
			return "", "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}
