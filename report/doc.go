// Package report turns simulation results into summaries for machines and
// people: aggregation of saturation runs over seeds (mean and sample
// standard deviation per arrival bin), text tables for terminals, Markdown
// tables for docs/, PNG line plots, and the small parsers and formatters
// the commands share (seed lists, scheduler lists, command lines).
//
// report runs no simulation of its own: it calls env and formats what env
// returns. It reads the wall clock only to time runs for logs; no result it
// computes depends on time or on the number of goroutines used.
package report
