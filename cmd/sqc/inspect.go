package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/sqc-dev/sqc/compiler/frontend"
)

func inspectCommand() *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "show a model's op histogram, parameter count and input/output shapes",
		ArgsUsage: "MODEL (an .onnx file or a HuggingFace directory)",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "graph", Usage: "print the whole graph in sqc's textual IR"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError{"inspect takes one MODEL argument"}
			}
			g, err := frontend.Load(c.Args().First())
			if err != nil {
				return err
			}
			if err := g.InferShapes(); err != nil {
				return err
			}
			w := c.App.Writer
			if c.Bool("graph") {
				_, err := fmt.Fprint(w, g.Text())
				return err
			}
			_, err = fmt.Fprint(w, g.Summary().String())
			return err
		},
	}
}
