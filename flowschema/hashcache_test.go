package flowschema
import "testing"
func TestWordPacking(t *testing.T) {
	s := "abcdefghijklmnopqrstuvwxyz0123456789"
	for n := 0; n <= len(s); n++ {
		for i := 0; 8*i < n; i++ {
			var want uint64
			for j := min(n, 8*i+8) - 1; j >= 8*i; j-- {
				want = want<<8 | uint64(s[j])
			}
			if got := word(s[:n], i); got != want {
				t.Errorf("word(%q, %d) = %#x, want %#x", s[:n], i, got, want)
			}
		}
	}
}
