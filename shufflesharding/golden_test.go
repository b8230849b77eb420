// Golden vectors recorded from upstream Kubernetes' dealer.
// Regenerate testdata/upstream_hands.json with:
//
//	cd kube/verify && go run ./cmd/shufflegolden

package shufflesharding

import (
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// goldenFile mirrors the schema written by kube/verify/cmd/shufflegolden.
type goldenFile struct {
	Upstream    string `json:"upstream"`
	MaxHashBits int    `json:"maxHashBits"`
	Hands       []struct {
		Deck  int    `json:"deck"`
		Hand  int    `json:"hand"`
		Hash  string `json:"hash"`
		Cards []int  `json:"cards"`
	} `json:"hands"`
	NewDealer []struct {
		Deck        int    `json:"deck"`
		Hand        int    `json:"hand"`
		OK          bool   `json:"ok"`
		Error       string `json:"error"`
		EntropyBits *int   `json:"entropyBits"`
	} `json:"newDealer"`
	FlowHashes []struct {
		FlowSchema    string           `json:"flowSchema"`
		Distinguisher string           `json:"distinguisher"`
		Hash          string           `json:"hash"`
		Source        string           `json:"source"`
		Hands         map[string][]int `json:"hands"`
	} `json:"flowHashes"`
}

func loadGolden(t *testing.T) *goldenFile {
	t.Helper()
	data, err := os.ReadFile("testdata/upstream_hands.json")
	if err != nil {
		t.Fatal(err)
	}
	var g goldenFile
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatalf("testdata/upstream_hands.json: %v", err)
	}
	// Guard against a truncated or emptied file silently passing.
	if len(g.Hands) < 400 || len(g.NewDealer) < 100 || len(g.FlowHashes) < 2 {
		t.Fatalf("golden file too small: %d hands, %d NewDealer cases, %d flow hashes",
			len(g.Hands), len(g.NewDealer), len(g.FlowHashes))
	}
	t.Logf("golden vectors from %s", g.Upstream)
	return &g
}

func parseGoldenHash(t *testing.T, s string) uint64 {
	t.Helper()
	h, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil || !strings.HasPrefix(s, "0x") {
		t.Fatalf("bad golden hash %q: %v", s, err)
	}
	return h
}

// checkHand deals hash through both Deal and DealIntoHand (with a fresh
// nil buffer and with a reused oversized one) and compares with want.
func checkHand(t *testing.T, d *Dealer, hash uint64, want []int) {
	t.Helper()
	deck, hand := d.DeckSize(), d.HandSize()
	var picked []int
	d.Deal(hash, func(card int) { picked = append(picked, card) })
	if !slices.Equal(picked, want) {
		t.Errorf("Dealer(%d, %d).Deal(%#x) picked %v, want %v", deck, hand, hash, picked, want)
	}
	if got := d.DealIntoHand(hash, nil); !slices.Equal(got, want) {
		t.Errorf("Dealer(%d, %d).DealIntoHand(%#x, nil) = %v, want %v", deck, hand, hash, got, want)
	}
	buf := make([]int, hand+3)
	for i := range buf {
		buf[i] = -1
	}
	if got := d.DealIntoHand(hash, buf); !slices.Equal(got, want) {
		t.Errorf("Dealer(%d, %d).DealIntoHand(%#x, buf[len %d]) = %v, want %v", deck, hand, hash, len(buf), got, want)
	}
}

func TestGoldenUpstreamHands(t *testing.T) {
	g := loadGolden(t)
	if g.MaxHashBits != MaxHashBits {
		t.Errorf("MaxHashBits = %d, want upstream %d", MaxHashBits, g.MaxHashBits)
	}
	for _, v := range g.Hands {
		d, err := NewDealer(v.Deck, v.Hand)
		if err != nil {
			t.Errorf("NewDealer(%d, %d) = %v, want a dealer", v.Deck, v.Hand, err)
			continue
		}
		if d.DeckSize() != v.Deck || d.HandSize() != v.Hand {
			t.Errorf("NewDealer(%d, %d) sizes = (%d, %d), want (%d, %d)",
				v.Deck, v.Hand, d.DeckSize(), d.HandSize(), v.Deck, v.Hand)
		}
		checkHand(t, d, parseGoldenHash(t, v.Hash), v.Cards)
	}
}

func TestGoldenUpstreamNewDealer(t *testing.T) {
	g := loadGolden(t)
	for _, v := range g.NewDealer {
		d, err := NewDealer(v.Deck, v.Hand)
		switch {
		case v.OK && err != nil:
			t.Errorf("NewDealer(%d, %d) = %v, want a dealer", v.Deck, v.Hand, err)
		case !v.OK && err == nil:
			t.Errorf("NewDealer(%d, %d) = %v, want error %q", v.Deck, v.Hand, d, v.Error)
		case !v.OK && err.Error() != v.Error:
			t.Errorf("NewDealer(%d, %d) error = %q, want %q", v.Deck, v.Hand, err.Error(), v.Error)
		}
		if v.EntropyBits != nil {
			if got := RequiredEntropyBits(v.Deck, v.Hand); got != *v.EntropyBits {
				t.Errorf("RequiredEntropyBits(%d, %d) = %d, want %d", v.Deck, v.Hand, got, *v.EntropyBits)
			}
		}
	}
}

func TestGoldenFlowHash(t *testing.T) {
	g := loadGolden(t)
	sawReference := false
	for _, v := range g.FlowHashes {
		want := parseGoldenHash(t, v.Hash)
		sawReference = sawReference || v.Source == "reference-doc"
		if got := FlowHash(v.FlowSchema, v.Distinguisher); got != want {
			t.Errorf("FlowHash(%q, %q) = %#x, want %#x (source %s)", v.FlowSchema, v.Distinguisher, got, want, v.Source)
		}
		if len(v.Hands) == 0 {
			t.Errorf("flow (%q, %q) has no hands", v.FlowSchema, v.Distinguisher)
		}
		for cfg, cards := range v.Hands {
			deck, hand, ok := strings.Cut(cfg, ",")
			deckN, err1 := strconv.Atoi(deck)
			handN, err2 := strconv.Atoi(hand)
			if !ok || err1 != nil || err2 != nil {
				t.Fatalf("bad golden config %q", cfg)
			}
			d, err := NewDealer(deckN, handN)
			if err != nil {
				t.Errorf("NewDealer(%d, %d) = %v, want a dealer", deckN, handN, err)
				continue
			}
			checkHand(t, d, want, cards)
		}
	}
	if !sawReference {
		t.Error("golden file has no reference-doc flow hashes")
	}
}
