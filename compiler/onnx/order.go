package onnx

import (
	"container/heap"
	"errors"
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/onnx/internal/onnxpb"
)

// order checks the graph's wiring and leaves g.Nodes in topological order:
// every value is produced once, every node input and graph output is a
// graph input, an initializer or a node output (all missing names are
// reported together), and nodes are sorted stably if the file lists them
// out of order, as ONNX forbids but some tools write.
func (b *builder) order(g *compiler.Graph, gp *onnxpb.GraphProto) error {
	available := map[string]bool{}
	for _, vi := range gp.GetInput() {
		available[vi.GetName()] = true
	}
	for name := range g.Initializers {
		available[name] = true
	}
	producer := map[string]int{}
	for i, n := range g.Nodes {
		for _, out := range n.Outputs {
			if out == "" {
				continue
			}
			if available[out] {
				return b.bad(nodeObject(i, gp.GetNode()[i]), fmt.Errorf("%w: output %q is also a graph input or initializer", compiler.ErrDuplicate, out))
			}
			if j, dup := producer[out]; dup {
				return b.bad(nodeObject(i, gp.GetNode()[i]), fmt.Errorf("%w: output %q is also produced by %s", compiler.ErrDuplicate, out, nodeObject(j, gp.GetNode()[j])))
			}
			producer[out] = i
		}
	}
	defined := func(name string) bool {
		_, produced := producer[name]
		return name == "" || available[name] || produced
	}

	var missing []error
	reported := map[string]bool{}
	for i, n := range g.Nodes {
		for _, in := range n.Inputs {
			if !defined(in) && !reported[in] {
				reported[in] = true
				missing = append(missing, b.bad("tensor "+in, fmt.Errorf("%w: input of %s is not a graph input, an initializer or any node's output",
					compiler.ErrMissingTensor, nodeObject(i, gp.GetNode()[i]))))
			}
		}
	}
	for _, out := range g.Outputs {
		if !defined(out.Name) && !reported[out.Name] {
			reported[out.Name] = true
			missing = append(missing, b.bad("tensor "+out.Name, fmt.Errorf("%w: graph output is not a graph input, an initializer or any node's output", compiler.ErrMissingTensor)))
		}
	}
	if len(missing) > 0 {
		return errors.Join(missing...)
	}
	return b.sort(g, gp, available, producer)
}

// sort reorders g.Nodes topologically, keeping file order among nodes that
// are ready together (Kahn's algorithm with a min-heap of node indices).
// It costs nothing for the usual, already sorted, file.
func (b *builder) sort(g *compiler.Graph, gp *onnxpb.GraphProto, available map[string]bool, producer map[string]int) error {
	inOrder := true
	done := map[string]bool{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if _, produced := producer[in]; produced && !done[in] {
				inOrder = false
			}
		}
		for _, out := range n.Outputs {
			done[out] = true
		}
	}
	if inOrder {
		return nil
	}
	waiting := make([]int, len(g.Nodes))     // unfinished producers each node waits on
	consumers := make([][]int, len(g.Nodes)) // consumers[p]: nodes fed by node p, once per edge
	for i, n := range g.Nodes {
		for _, in := range n.Inputs {
			if p, produced := producer[in]; produced {
				waiting[i]++
				consumers[p] = append(consumers[p], i)
			}
		}
	}
	ready := &indexHeap{}
	for i := range g.Nodes {
		if waiting[i] == 0 {
			heap.Push(ready, i)
		}
	}
	sorted := make([]*compiler.Node, 0, len(g.Nodes))
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		sorted = append(sorted, g.Nodes[i])
		for _, c := range consumers[i] {
			if waiting[c]--; waiting[c] == 0 {
				heap.Push(ready, c)
			}
		}
	}
	if len(sorted) < len(g.Nodes) {
		for i := range g.Nodes {
			if waiting[i] > 0 {
				return b.bad(nodeObject(i, gp.GetNode()[i]), fmt.Errorf("%w: the node depends, directly or not, on its own output", compiler.ErrCyclicGraph))
			}
		}
	}
	g.Nodes = sorted
	return nil
}

// indexHeap is a min-heap of node indices.
type indexHeap []int

func (h indexHeap) Len() int           { return len(h) }
func (h indexHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h indexHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *indexHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *indexHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
