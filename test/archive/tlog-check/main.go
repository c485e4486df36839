// tlog-check verifies a Context Guardian span log with Go's reference packages (golang.org/x/mod/sumdb/note and
// golang.org/x/mod/sumdb/tlog), reading the log's files as C2SP tlog-tiles lays them out. Issue 29: "the Go reference
// packages verify the checkpoint's signature with the served verifier key, every entry's inclusion through the served
// tiles, and a later checkpoint's consistency with an earlier one".
//
//	tlog-check <log folder> <verifier key> [<earlier checkpoint file>]
//
// Prints "ok <origin> size <N> entries <N> [consistent with <M>]" and exits 0, or prints why not and exits 1.
package main

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type checkpoint struct {
	origin string
	size   int64
	root   tlog.Hash
}

// open verifies the note's signature with the verifier key and parses its C2SP tlog-checkpoint body.
func open(file string, verifier note.Verifier) (checkpoint, error) {
	msg, err := os.ReadFile(file)
	if err != nil {
		return checkpoint{}, err
	}
	n, err := note.Open(msg, note.VerifierList(verifier))
	if err != nil {
		return checkpoint{}, fmt.Errorf("%s: %w", file, err)
	}
	lines := strings.SplitN(n.Text, "\n", 4)
	if len(lines) < 4 {
		return checkpoint{}, errors.New("checkpoint body is not origin, size, root")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return checkpoint{}, err
	}
	raw, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(raw) != tlog.HashSize {
		return checkpoint{}, errors.New("checkpoint root is not a base64 SHA-256 hash")
	}
	if lines[0] != verifier.Name() {
		return checkpoint{}, errors.New("checkpoint origin is not the key's name")
	}
	var root tlog.Hash
	copy(root[:], raw)
	return checkpoint{origin: lines[0], size: size, root: root}, nil
}

// tiles reads tiles from the folder: Go names a tile tile/8/<L>/<N>, C2SP tlog-tiles drops the height.
type tiles struct{ dir string }

func (t tiles) Height() int { return 8 }

func (t tiles) c2spPath(tile tlog.Tile) string {
	return filepath.Join(t.dir, "tile", strings.TrimPrefix(tile.Path(), "tile/8/"))
}

func (t tiles) ReadTiles(list []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(list))
	for i, tile := range list {
		data, err := os.ReadFile(t.c2spPath(tile))
		if err != nil {
			return nil, err
		}
		out[i] = data
	}
	return out, nil
}

func (t tiles) SaveTiles([]tlog.Tile, [][]byte) {}

// entries reads the entry bundles of a tree of size n: big-endian uint16 length, then the entry.
func entries(dir string, size int64) ([][]byte, error) {
	var out [][]byte
	for n := int64(0); n*256 < size; n++ {
		w := min(256, size-n*256)
		tile := tlog.Tile{H: 8, L: 0, N: n, W: int(w)}
		rel := strings.Replace(strings.TrimPrefix(tile.Path(), "tile/8/"), "0/", "entries/", 1)
		data, err := os.ReadFile(filepath.Join(dir, "tile", rel))
		if err != nil {
			return nil, err
		}
		for len(data) > 0 {
			if len(data) < 2 || len(data) < 2+int(binary.BigEndian.Uint16(data)) {
				return nil, fmt.Errorf("entry bundle %d is truncated", n)
			}
			l := int(binary.BigEndian.Uint16(data))
			out = append(out, data[2:2+l])
			data = data[2+l:]
		}
	}
	if int64(len(out)) != size {
		return nil, fmt.Errorf("entry bundles hold %d entries, the checkpoint says %d", len(out), size)
	}
	return out, nil
}

func run(args []string) (string, error) {
	if len(args) < 2 {
		return "", errors.New("usage: tlog-check <log folder> <verifier key> [<earlier checkpoint file>]")
	}
	dir := args[0]
	verifier, err := note.NewVerifier(args[1])
	if err != nil {
		return "", err
	}
	cp, err := open(filepath.Join(dir, "checkpoint"), verifier)
	if err != nil {
		return "", err
	}
	tree := tlog.Tree{N: cp.size, Hash: cp.root}
	// TileHashReader checks every tile it reads against the tree's root before handing out a hash.
	hashes := tlog.TileHashReader(tree, tiles{dir})
	all, err := entries(dir, cp.size)
	if err != nil {
		return "", err
	}
	for i, e := range all {
		proof, err := tlog.ProveRecord(cp.size, int64(i), hashes)
		if err != nil {
			return "", fmt.Errorf("entry %d: %w", i, err)
		}
		if err := tlog.CheckRecord(proof, cp.size, cp.root, int64(i), tlog.RecordHash(e)); err != nil {
			return "", fmt.Errorf("entry %d: %w", i, err)
		}
	}
	out := fmt.Sprintf("ok %s size %d entries %d", cp.origin, cp.size, len(all))
	if len(args) > 2 {
		old, err := open(args[2], verifier)
		if err != nil {
			return "", err
		}
		if old.size > cp.size {
			return "", fmt.Errorf("earlier checkpoint size %d is past the current %d", old.size, cp.size)
		}
		proof, err := tlog.ProveTree(cp.size, old.size, hashes)
		if err != nil {
			return "", err
		}
		if err := tlog.CheckTree(proof, cp.size, cp.root, old.size, old.root); err != nil {
			return "", err
		}
		out += fmt.Sprintf(" consistent with %d", old.size)
	}
	return out, nil
}

func main() {
	out, err := run(os.Args[1:])
	if err != nil {
		fmt.Println("fail:", err)
		os.Exit(1)
	}
	fmt.Println(out)
}
