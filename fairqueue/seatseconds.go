package fairqueue

import (
	"math"
	"strconv"
	"time"
)

// SeatSeconds is an amount of work in seat-seconds, in fixed point: the value
// n stands for n/1e8 seat-seconds. It is the unit of the virtual clock R and
// of every per-request and per-queue amount of work, exactly as upstream's
// request.SeatSeconds, so sums and ties come out the same.
//
// Arithmetic is modular (uint64): subtracting a larger value wraps, and so
// does adding the result of SeatsTimesDuration for a negative duration, which
// is how upstream applies negative corrections.
type SeatSeconds uint64

// MaxSeatSeconds is the largest SeatSeconds value. The dispatcher treats a
// queue whose virtual finish time equals it as having nothing to dispatch,
// as upstream does.
const MaxSeatSeconds = SeatSeconds(math.MaxUint64)

// seatSecondsScale is the number of SeatSeconds units in one seat-second.
const seatSecondsScale = 1e8

// SeatsTimesDuration returns seats·d, rounded to the nearest unit (halves
// away from zero) with upstream's float64 arithmetic. A negative product
// wraps around through int64, as upstream's does.
func SeatsTimesDuration(seats float64, d time.Duration) SeatSeconds {
	return SeatSeconds(int64(math.Round(seats * float64(d) / (1e9 / seatSecondsScale))))
}

// DurationPerSeat returns the duration that spreads ss over the given number
// of seats, truncated to a nanosecond, with upstream's float64 arithmetic.
func (ss SeatSeconds) DurationPerSeat(seats float64) time.Duration {
	return time.Duration(float64(ss) / seats * (float64(time.Second) / seatSecondsScale))
}

// Float returns ss in seat-seconds as a float64, possibly losing precision.
func (ss SeatSeconds) Float() float64 { return float64(ss) / seatSecondsScale }

// String formats ss as upstream does, with exactly eight decimals and the
// unit "ss", for example "0.00300000ss".
func (ss SeatSeconds) String() string {
	const unit = SeatSeconds(seatSecondsScale)
	var buf [32]byte
	b := strconv.AppendUint(buf[:0], uint64(ss/unit), 10)
	b = append(b, '.')
	frac := uint64(ss % unit)
	for div := uint64(unit / 10); div > 0; div /= 10 { // eight digits, zero-padded
		b = append(b, byte('0'+frac/div%10))
	}
	b = append(b, "ss"...)
	return string(b)
}
