package compiler

import (
	"fmt"
	"slices"
	"strings"
)

// OpCount is one row of an op histogram.
type OpCount struct {
	Op    string
	Count int
}

// DTypeCount is the number of initializer elements and bytes of one dtype.
type DTypeCount struct {
	DType    DType
	Elements int64
	Bytes    int64
}

// Summary is what `sqc inspect` shows about a graph.
type Summary struct {
	Name    string
	Opset   int64
	Meta    [][2]string // sorted by key
	Inputs  []*Value
	Outputs []*Value

	Nodes int
	// Ops is the op histogram, most frequent first, ties by name.
	Ops []OpCount

	Initializers int
	Params       int64        // initializer elements
	ParamBytes   int64        // initializer bytes in memory
	ByDType      []DTypeCount // by dtype, in DType order
}

// Summary computes the graph's summary.
func (g *Graph) Summary() Summary {
	s := Summary{Name: g.Name, Opset: g.Opset, Nodes: len(g.Nodes), Initializers: len(g.Initializers)}
	for _, k := range sortedKeys(g.Meta) {
		s.Meta = append(s.Meta, [2]string{k, g.Meta[k]})
	}
	for _, v := range g.Inputs {
		s.Inputs = append(s.Inputs, v.Clone())
	}
	for _, v := range g.Outputs {
		s.Outputs = append(s.Outputs, v.Clone())
	}
	counts := map[string]int{}
	for _, n := range g.Nodes {
		counts[n.Op]++
	}
	for op, c := range counts {
		s.Ops = append(s.Ops, OpCount{op, c})
	}
	slices.SortFunc(s.Ops, func(a, b OpCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Op, b.Op)
	})
	byDT := map[DType]*DTypeCount{}
	for _, t := range g.Initializers {
		if t == nil {
			continue
		}
		n := int64(t.Len())
		s.Params += n
		s.ParamBytes += t.Bytes()
		c := byDT[t.DType]
		if c == nil {
			c = &DTypeCount{DType: t.DType}
			byDT[t.DType] = c
		}
		c.Elements += n
		c.Bytes += t.Bytes()
	}
	for _, c := range byDT {
		s.ByDType = append(s.ByDType, *c)
	}
	slices.SortFunc(s.ByDType, func(a, b DTypeCount) int { return int(a.DType) - int(b.DType) })
	return s
}

// String renders the summary as `sqc inspect` prints it.
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "graph %q, opset %d\n", s.Name, s.Opset)
	for _, kv := range s.Meta {
		fmt.Fprintf(&b, "  %s = %s\n", kv[0], kv[1])
	}
	b.WriteString("inputs:\n")
	for _, v := range s.Inputs {
		fmt.Fprintf(&b, "  %s: %s\n", v.Name, typeString(v.DType, v.Shape))
	}
	b.WriteString("outputs:\n")
	for _, v := range s.Outputs {
		fmt.Fprintf(&b, "  %s: %s\n", v.Name, typeString(v.DType, v.Shape))
	}
	fmt.Fprintf(&b, "parameters: %s in %d initializers, %s\n", groupDigits(s.Params), s.Initializers, byteSize(s.ParamBytes))
	for _, c := range s.ByDType {
		fmt.Fprintf(&b, "  %s: %s (%s)\n", c.DType, groupDigits(c.Elements), byteSize(c.Bytes))
	}
	fmt.Fprintf(&b, "nodes: %d\n", s.Nodes)
	width := 0
	for _, o := range s.Ops {
		width = max(width, len(o.Op))
	}
	for _, o := range s.Ops {
		fmt.Fprintf(&b, "  %-*s %d\n", width, o.Op, o.Count)
	}
	return b.String()
}

// groupDigits writes 11171074 as 11,171,074.
func groupDigits(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// byteSize writes a byte count in binary units: 44.7 MB is "42.6 MiB".
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n), ""
	for _, s := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v /= unit
		suffix = s
		if v < unit {
			break
		}
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}
