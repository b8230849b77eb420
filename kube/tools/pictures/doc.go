// Package pictures draws what the fairslice command prints: a fair-queuing
// simulation as a timeline per flow with each flow's wait-time
// distribution, Endpoints against EndpointSlices bytes over cluster size
// with etcd's request limit, topology hints per zone against the CPU share
// and the overload band, and shuffle sharding's squish probability against
// hand size.
//
// Each picture is a Figure built from the same values the command prints
// (a simulation's results, a propagation report, a hints run, an odds
// table), drawn with gonum.org/v1/plot and written as SVG, as one
// self-contained HTML page (the SVG inline, the numbers as a table), or as
// PNG. The SVG carries the plotted series as JSON in a <metadata> element,
// so that a test, or a reader, can check the picture against the text
// output without measuring lines: ReadData returns them.
//
// The package lives in the kube/ module because the plotting library is a
// dependency the core module does not take; it imports only the core
// module's packages, so any program that can produce a scenario run, a
// propagation report or a hints outcome can draw it.
package pictures
