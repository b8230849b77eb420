package shufflesharding

import (
	"fmt"
	"slices"
	"testing"
)

var pickerSink []int

// BenchmarkPickerShardInto sweeps member count, shard size and zoning. The
// hot path must report 0 allocs/op; moved/add is the fraction of shards
// that change when one member is added (about size/(members+1)).
func BenchmarkPickerShardInto(b *testing.B) {
	for _, zones := range []int{0, 3} {
		for _, n := range []int{16, 256, 4096} {
			for _, size := range []int{4, 8, 64} {
				if size > n {
					continue
				}
				b.Run(fmt.Sprintf("zones=%d/members=%d/size=%d", zones, n, size), func(b *testing.B) {
					members := pickerBenchMembers(n, zones)
					p := mustPicker(b, members)
					dst := make([]int, 0, size)
					b.ReportAllocs()
					key := uint64(0)
					for b.Loop() {
						key += 0x9e3779b97f4a7c15
						dst = p.ShardInto(key, size, dst)
					}
					pickerSink = dst

					grown := mustPicker(b, append(members, Member{Name: "added", Zone: members[0].Zone}))
					moved := 0
					const keys = 2048
					for k := range uint64(keys) {
						if !slices.Equal(p.ShardInto(k, size, nil), grown.ShardInto(k, size, nil)) {
							moved++
						}
					}
					b.ReportMetric(float64(moved)/keys, "moved/add")
				})
			}
		}
	}
}

func BenchmarkOverlapDistribution(b *testing.B) {
	for _, c := range []struct {
		zones []int
		size  int
	}{{[]int{50}, 4}, {[]int{30, 30, 30}, 3}, {[]int{1000, 1000, 1000, 1000}, 14}} {
		b.Run(fmt.Sprintf("zones=%d/size=%d", len(c.zones), c.size), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := OverlapDistribution(c.zones, c.size); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func pickerBenchMembers(n, zones int) []Member {
	members := make([]Member, n)
	for i := range members {
		members[i].Name = fmt.Sprintf("member-%d", i)
		if zones > 0 {
			members[i].Zone = fmt.Sprintf("zone-%d", i%zones)
		}
	}
	return members
}
