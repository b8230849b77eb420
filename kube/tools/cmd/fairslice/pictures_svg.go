package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/fairslice/fairslice/kube/tools/pictures"
)

// pictureFlags are the --svg and --html flags that commands with a
// picture share.
type pictureFlags struct {
	svg, html *string
}

// addPictureFlags registers --svg and --html on fs.
func addPictureFlags(fs *flag.FlagSet) pictureFlags {
	return pictureFlags{
		svg:  fs.String("svg", "", "also draw the result as an SVG picture into `FILE`"),
		html: fs.String("html", "", "also draw the result as one self-contained HTML page into `FILE`"),
	}
}

// wanted reports whether a picture was asked for.
func (p pictureFlags) wanted() bool { return *p.svg != "" || *p.html != "" }

// write builds the figure, if one was asked for, and writes it to the
// files named by the flags.
func (p pictureFlags) write(cmd string, build func() (*pictures.Figure, error), stderr io.Writer) int {
	if !p.wanted() {
		return exitOK
	}
	fig, err := build()
	if err != nil {
		fmt.Fprintf(stderr, "fairslice %s: picture: %v\n", cmd, err)
		return exitFailure
	}
	for _, out := range []struct {
		name  string
		write func(io.Writer) error
	}{{*p.svg, fig.WriteSVG}, {*p.html, fig.WriteHTML}} {
		if out.name == "" {
			continue
		}
		if err := writeFile(out.name, out.write); err != nil {
			fmt.Fprintf(stderr, "fairslice %s: %v\n", cmd, err)
			return exitFailure
		}
	}
	return exitOK
}

func writeFile(name string, write func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", name, err)
	}
	return f.Close()
}
