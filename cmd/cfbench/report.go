package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"
)

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	return nil
}

// verdict renders a goal check.
func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// dur rounds a duration for the table.
func dur(d time.Duration) string {
	if d >= 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// medianOf is the median of f over xs (the upper one of an even count), 0
// for none.
func medianOf[T any](xs []T, f func(T) time.Duration) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	v := make([]time.Duration, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// medianFloat is medianOf for float64 values.
func medianFloat[T any](xs []T, f func(T) float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// runSubcommand is a benchmark subcommand's whole run: parse its flags,
// run its benchmark under -timeout with progress on stderr, and print the
// report on stdout, as JSON with -json and as a table otherwise.
func runSubcommand[C interface{ common() commonFlags }, R interface{ writeTable(io.Writer) error }](
	ctx context.Context, args []string, stdout, stderr io.Writer,
	parse func([]string, io.Writer) (C, error), bench func(context.Context, C, io.Writer) (R, error)) error {
	cfg, err := parse(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.common().Timeout)
	defer cancel()
	rep, err := bench(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	if cfg.common().JSON {
		return writeJSON(stdout, rep)
	}
	return rep.writeTable(stdout)
}
