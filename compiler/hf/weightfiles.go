package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
)

// Index files of checkpoints that save_pretrained splits into shards
// (larger than its max_shard_size).
const (
	SafetensorsIndexFile = "model.safetensors.index.json"
	TorchIndexFile       = "pytorch_model.bin.index.json"
)

// weightFiles are the checkpoint files a folder may hold, in the order
// OpenWeights prefers them (transformers' from_pretrained prefers
// safetensors too).
var weightFiles = []string{SafetensorsFile, SafetensorsIndexFile, TorchFile, TorchIndexFile}

// HasWeights reports whether dir holds a checkpoint OpenWeights reads.
func HasWeights(dir string) bool {
	for _, f := range weightFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// OpenWeights opens the checkpoint in dir: model.safetensors, the shards
// of model.safetensors.index.json, pytorch_model.bin (torch.save's zip
// format) or the shards of pytorch_model.bin.index.json, the first found.
func OpenWeights(dir string) (WeightSource, error) {
	for _, f := range weightFiles {
		p := filepath.Join(dir, f)
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		switch f {
		case SafetensorsFile:
			return OpenSafetensors(p)
		case TorchFile:
			return OpenTorchCheckpoint(p)
		default:
			return OpenSharded(p)
		}
	}
	return nil, compiler.BadInput(filepath.Join(dir, SafetensorsFile), "", missingWeightsError(dir))
}

// openShard opens one weight file by its extension.
func openShard(p string) (WeightSource, error) {
	if strings.HasSuffix(p, ".safetensors") {
		return OpenSafetensors(p)
	}
	return OpenTorchCheckpoint(p)
}

// Sharded is a WeightSource over the shards an index file lists: its
// weight_map names, for every parameter, the file holding it.
type Sharded struct {
	path   string
	files  map[string]string // parameter -> shard file name
	shards map[string]WeightSource
}

// OpenSharded reads an index (model.safetensors.index.json or
// pytorch_model.bin.index.json) and opens every shard it names, which
// must be plain file names beside it.
func OpenSharded(index string) (*Sharded, error) {
	data, err := os.ReadFile(index)
	if err != nil {
		return nil, compiler.BadInput(index, "", unwrapPath(err))
	}
	var raw struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, compiler.BadInput(index, "", fmt.Errorf("%w: %v", compiler.ErrMalformed, err))
	}
	if len(raw.WeightMap) == 0 {
		return nil, compiler.BadInput(index, "weight_map", fmt.Errorf("%w: no weight_map, or an empty one", compiler.ErrMalformed))
	}
	s := &Sharded{path: index, files: raw.WeightMap, shards: map[string]WeightSource{}}
	names := make([]string, 0, len(raw.WeightMap))
	for name := range raw.WeightMap {
		names = append(names, name)
	}
	sort.Strings(names) // errors name the same parameter every run
	for _, name := range names {
		f := raw.WeightMap[name]
		if s.shards[f] != nil {
			continue
		}
		if f == "" || f != filepath.Base(f) || f == "." || f == ".." || !(strings.HasSuffix(f, ".safetensors") || strings.HasSuffix(f, ".bin")) {
			return nil, compiler.BadInput(index, name, fmt.Errorf("%w: shard %q is not a .safetensors or .bin file beside the index", compiler.ErrMalformed, f))
		}
		shard, err := openShard(filepath.Join(filepath.Dir(index), f))
		if err != nil {
			return nil, err
		}
		s.shards[f] = shard
	}
	return s, nil
}

// File is the index's path.
func (s *Sharded) File() string { return s.path }

// Weight implements WeightSource: the name's variants (as Safetensors'
// lookup tries them) in the weight map, read from their shard.
func (s *Sharded) Weight(name string, shape []int64) (*compiler.Tensor, error) {
	for _, v := range nameVariants(name) {
		if f, ok := s.files[v]; ok {
			return s.shards[f].Weight(v, shape)
		}
	}
	return nil, compiler.BadInput(s.path, name, fmt.Errorf("%w: no tensor %q (nor under another prefix) in the weight map's %d entries",
		compiler.ErrMissingTensor, name, len(s.files)))
}
