module github.com/fairslice/fairslice

go 1.26

require pgregory.net/rapid v1.3.0

require github.com/google/go-cmp v0.7.0 // indirect
