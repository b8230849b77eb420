package fleetlease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/fairslice/fairslice/apf/fleet"
)

// AnnotationSummary is the Lease annotation holding the replica's
// summary, as JSON.
const AnnotationSummary = "fairslice.dev/fleet-summary"

// LabelFleet is the Lease label naming the fleet.
const LabelFleet = "fairslice.dev/fleet"

// MaxSummaryBytes bounds a published summary's JSON: 4 KB, far under the
// 1.5 MB an object may have.
const MaxSummaryBytes = 4096

// Config configures a Store.
type Config struct {
	// Client reaches the API server's coordination.k8s.io/v1. Required.
	Client coordinationclient.LeasesGetter
	// Namespace holds the fleet's Leases. Required.
	Namespace string
	// Fleet names the fleet: the LabelFleet value and the prefix of the
	// Leases' names. Required.
	Fleet string
	// Now stamps spec.renewTime; default time.Now.
	Now func() time.Time
}

// Store is a fleet.Store over Leases. Safe for concurrent use.
type Store struct {
	cfg Config
}

var _ fleet.Store = (*Store)(nil)

// New returns a Store, or an error naming every bad field.
func New(cfg Config) (*Store, error) {
	var errs []error
	if cfg.Client == nil {
		errs = append(errs, errors.New("fleetlease: Config.Client is nil"))
	}
	for _, msg := range validation.IsDNS1123Label(cfg.Namespace) {
		errs = append(errs, fmt.Errorf("fleetlease: Config.Namespace=%q: %s", cfg.Namespace, msg))
	}
	for _, msg := range validation.IsValidLabelValue(cfg.Fleet) {
		errs = append(errs, fmt.Errorf("fleetlease: Config.Fleet=%q: %s", cfg.Fleet, msg))
	}
	if cfg.Fleet == "" {
		errs = append(errs, errors.New("fleetlease: Config.Fleet is empty"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Store{cfg: cfg}, nil
}

// LeaseName is the name of replica's Lease.
func (s *Store) LeaseName(replica string) string { return s.cfg.Fleet + "-" + replica }

// Encode returns sum's JSON as the annotation holds it (short keys, zero
// fields left out), leaving out its lightest flows until it is at
// most MaxSummaryBytes, or an error if even without flows it is larger.
func Encode(sum fleet.Summary) ([]byte, error) {
	for {
		b, err := json.Marshal(toWire(sum))
		if err != nil {
			return nil, fmt.Errorf("fleetlease: summary of %q: %w", sum.Replica, err)
		}
		if len(b) <= MaxSummaryBytes {
			return b, nil
		}
		if len(sum.Flows) == 0 {
			return nil, fmt.Errorf("fleetlease: summary of %q is %d bytes without flows, want at most %d", sum.Replica, len(b), MaxSummaryBytes)
		}
		sum.Flows = sum.Flows[:len(sum.Flows)-1] // the lightest: Flows are heaviest first
	}
}

// Publish implements fleet.Store: it writes sum to its replica's Lease,
// creating it if missing.
func (s *Store) Publish(ctx context.Context, sum fleet.Summary) error {
	name := s.LeaseName(sum.Replica)
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Errorf("fleetlease: Lease name %q of replica %q: %v", name, sum.Replica, msgs)
	}
	b, err := Encode(sum)
	if err != nil {
		return err
	}
	leases := s.cfg.Client.Leases(s.cfg.Namespace)
	now := metav1.NewMicroTime(s.cfg.Now())
	holder := sum.Replica
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.cfg.Namespace,
			Labels: map[string]string{LabelFleet: s.cfg.Fleet}, Annotations: map[string]string{AnnotationSummary: string(b)}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &now}}
		_, err = leases.Create(ctx, l, metav1.CreateOptions{})
		return wrap("create", name, err)
	case err != nil:
		return wrap("get", name, err)
	}
	l = l.DeepCopy()
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Labels[LabelFleet] = s.cfg.Fleet
	l.Annotations[AnnotationSummary] = string(b)
	l.Spec.HolderIdentity, l.Spec.RenewTime = &holder, &now
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return wrap("update", name, err)
}

// Read implements fleet.Store: the summaries of the fleet's Leases, in
// replica name order.
// Leases whose annotation is missing or does not decode are skipped.
func (s *Store) Read(ctx context.Context) ([]fleet.Summary, error) {
	list, err := s.cfg.Client.Leases(s.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelFleet + "=" + s.cfg.Fleet})
	if err != nil {
		return nil, fmt.Errorf("fleetlease: list Leases of fleet %q in %q: %w", s.cfg.Fleet, s.cfg.Namespace, err)
	}
	out := make([]fleet.Summary, 0, len(list.Items))
	for i := range list.Items {
		sum, ok := Decode(list.Items[i].Annotations[AnnotationSummary])
		if !ok {
			continue
		}
		out = append(out, sum)
	}
	slices.SortFunc(out, func(a, b fleet.Summary) int { return strings.Compare(a.Replica, b.Replica) })
	return out, nil
}

// Decode returns the summary an annotation holds, and whether it holds a
// valid one.
func Decode(annotation string) (fleet.Summary, bool) {
	var w wireSummary
	if json.Unmarshal([]byte(annotation), &w) != nil {
		return fleet.Summary{}, false
	}
	s := fromWire(w)
	return s, s.Validate() == nil
}

func wrap(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("fleetlease: %s Lease %q: %w", op, name, err)
}
