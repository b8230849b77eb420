//go:build ignore

// Command funclen fails when a function outside tests is longer than 80
// lines (a function a reader can hold in one screen), unless its
// doc comment says why with a line starting "Long:". Run from the
// repository's root: go run .ci/funclen.go
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

const maxLines = 80

func main() {
	var long []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if n > maxLines && !explained(fn.Doc) {
				long = append(long, fmt.Sprintf("%s: %s is %d lines", fset.Position(fn.Pos()), fn.Name.Name, n))
			}
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "funclen:", err)
		os.Exit(2)
	}
	for _, l := range long {
		fmt.Println(l)
	}
	if len(long) > 0 {
		fmt.Printf("funclen: %d functions over %d lines without a \"Long:\" line in their doc saying why\n", len(long), maxLines)
		os.Exit(1)
	}
}

// explained reports whether doc has a line starting "Long:".
func explained(doc *ast.CommentGroup) bool {
	if doc == nil {
		return false
	}
	for _, l := range strings.Split(doc.Text(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "Long:") {
			return true
		}
	}
	return false
}
