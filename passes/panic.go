package passes

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
)

// PanicError is a panic inside a pass, recovered by Run: a bug in sqc, not
// bad input, so it matches compiler.ErrInternal (the CLI exits 1) and never
// compiler.ErrBadInput. It names the pass, the model file and, for passes
// that keep a cursor, the node the pass was looking at.
type PanicError struct {
	Pass   string
	Source string // the graph's Meta["source"], if any
	Node   string // `node "name" (Op)`, "" when unknown
	Value  any    // what was panicked with
	Site   string // file:line of the panic, "" when unknown
	Stack  []byte // the panicking goroutine's stack, for bug reports
}

func (e *PanicError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", compiler.ErrInternal)
	if e.Source != "" {
		fmt.Fprintf(&b, "%s: ", e.Source)
	}
	fmt.Fprintf(&b, "pass %s panicked", e.Pass)
	if e.Node != "" {
		fmt.Fprintf(&b, " at %s", e.Node)
	}
	fmt.Fprintf(&b, ": %v", e.Value)
	if e.Site != "" {
		fmt.Fprintf(&b, " (at %s)", e.Site)
	}
	return b.String()
}

// Unwrap makes a PanicError match compiler.ErrInternal (only: whatever the
// pass panicked with, the graph is not to blame).
func (e *PanicError) Unwrap() error { return compiler.ErrInternal }

// runPass runs p on g, turning a panic into a *PanicError.
func runPass(p Pass, g *compiler.Graph) (changed bool, err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		e := &PanicError{Pass: p.Name, Source: g.Meta["source"], Value: r}
		if np, ok := r.(*nodePanic); ok {
			e.Node, e.Value, e.Site, e.Stack = np.node, np.value, np.site, np.stack
		} else {
			e.Site, e.Stack = compiler.PanicSite(), debug.Stack()
		}
		changed, err = false, e
	}()
	return p.Run(g)
}

// cursor lets a pass say which node it is working on, so that a panic
// there names it: declare one, defer its annotate and set n as the loop
// moves on.
//
//	var cur cursor
//	defer cur.annotate()
//	for _, n := range g.Nodes {
//		cur.n = n
type cursor struct{ n *compiler.Node }

// nodePanic is a panic that a cursor has labelled with its node.
type nodePanic struct {
	node, site string
	value      any
	stack      []byte
}

// annotate, deferred, re-raises a panic labelled with the cursor's node
// (and leaves the panic alone when the pass had not reached a node).
func (c *cursor) annotate() {
	if c.n == nil {
		return
	}
	r := recover()
	if r == nil {
		return
	}
	if _, labelled := r.(*nodePanic); labelled {
		panic(r) // an inner pass's cursor was more precise
	}
	// Still inside the deferred call, the stack holds the panic's frames.
	panic(&nodePanic{node: nodeRef(c.n), value: r, site: compiler.PanicSite(), stack: debug.Stack()})
}
