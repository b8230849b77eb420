#!/bin/sh
# Regenerates borrowing.golden.json by running upstream's unexported
# borrowing code (k8s.io/apiserver v0.37.2) on random inputs:
#   cd kube/compare/flowschema/testdata && ./gen-borrowing.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(go env GOMODCACHE)/k8s.io/apiserver@v0.37.2
[ -d "$src" ] || go mod download k8s.io/apiserver@v0.37.2
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
cp -r "$src" "$tmp/apiserver"
chmod -R u+w "$tmp/apiserver"
rm -f "$tmp"/apiserver/pkg/util/flowcontrol/*_test.go
cp "$here/upstream_borrowing_test.go.txt" "$tmp/apiserver/pkg/util/flowcontrol/zz_golden_borrowing_test.go"
cd "$tmp/apiserver"
GOFLAGS=-mod=mod go test -count=1 -run TestGoldenBorrowing ./pkg/util/flowcontrol/ -golden-out "$here/borrowing.golden.json"
