module github.com/fairslice/fairslice

go 1.26

require (
	github.com/google/go-cmp v0.7.0
	go.uber.org/goleak v1.3.0
	pgregory.net/rapid v1.3.0
	sigs.k8s.io/yaml v1.6.0
)

require (
	github.com/kr/text v0.2.0 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
)
