package hf

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path"
	"slices"

	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/pytorch"
	"github.com/nlpodyssey/gopickle/types"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/internal/halffloat"
)

// TorchFile is the name `transformers` gives a checkpoint saved by
// torch.save (save_pretrained with safe_serialization=False, and every
// checkpoint saved before safetensors became the default).
const TorchFile = "pytorch_model.bin"

// TorchCheckpoint is a WeightSource reading a state dict that torch.save
// wrote in its zip format (torch 1.6 and later): data.pkl, a pickle of an
// OrderedDict of tensors whose storages are the archive's data/<key>
// records. The pickle is read by gopickle's unpickler, which builds only
// the classes it knows (tensors, dicts; storages are ours) and never runs
// code; storages are read here, after checking that the record holds the
// bytes the pickle claims, so a corrupt file cannot make a huge
// allocation.
type TorchCheckpoint struct {
	path    string
	tensors map[string]*pytorch.Tensor
	// others names the entries that are not tensors sqc reads (a class
	// of a newer torch, say), for the error that a parameter is missing.
	others []string
}

// storageKinds are the storage classes of a state dict, by name, with
// their element size in bytes.
var storageKinds = map[string]uint64{
	"FloatStorage": 4, "HalfStorage": 2, "BFloat16Storage": 2, "DoubleStorage": 8,
	"LongStorage": 8, "IntStorage": 4, "ShortStorage": 2, "CharStorage": 1, "ByteStorage": 1, "BoolStorage": 1, // buffers (position_ids)
}

// storageClass is a storage class named in the pickle.
type storageClass struct {
	name  string
	bytes uint64
}

// rawStorage is a storage's bytes as its record holds them, converted
// when a tensor of it is asked for (gopickle's own storages widen float16
// subnormals wrongly; internal/halffloat does it exactly).
type rawStorage struct {
	class storageClass
	data  []byte
}

// SetFromFile and SetFromFileWithSize make rawStorage a
// pytorch.StorageInterface, which gopickle's tensor rebuild takes;
// loadStorage fills it.
func (*rawStorage) SetFromFile(io.Reader) error {
	return errors.New("rawStorage is filled by loadStorage")
}

func (*rawStorage) SetFromFileWithSize(io.Reader, int) error {
	return errors.New("rawStorage is filled by loadStorage")
}

// OpenTorchCheckpoint reads and indexes a torch.save zip archive.
func OpenTorchCheckpoint(file string) (ck *TorchCheckpoint, err error) {
	zr, err := zip.OpenReader(file)
	if err != nil {
		if errors.Is(err, zip.ErrFormat) {
			return nil, compiler.BadInput(file, "", fmt.Errorf("%w: not a zip archive: torch.save's format before torch 1.6, or not a checkpoint "+
				"(load it in PyTorch and save it again, or save the model with safe_serialization=True)", compiler.ErrMalformed))
		}
		return nil, compiler.BadInput(file, "", unwrapPath(err))
	}
	defer zr.Close()
	info, err := os.Stat(file)
	if err != nil {
		return nil, compiler.BadInput(file, "", unwrapPath(err))
	}
	size := info.Size()
	// A panic in the unpickler on a corrupt pickle is the file's fault:
	// report it as such.
	defer func() {
		if r := recover(); r != nil {
			ck, err = nil, compiler.BadInput(file, "data.pkl", fmt.Errorf("%w: unreadable pickle (%v)", compiler.ErrMalformed, r))
		}
	}()
	records := map[string]*zip.File{}
	for _, f := range zr.File {
		// Records are <archive name>/data.pkl and <archive name>/data/<key>.
		dir, base := path.Split(f.Name)
		if path.Base(path.Clean(dir)) == "data" {
			records["data/"+base] = f
		} else {
			records[base] = f
		}
	}
	if records["constants.pkl"] != nil {
		return nil, compiler.BadInput(file, "", fmt.Errorf("%w: a TorchScript archive, not a state dict", compiler.ErrMalformed))
	}
	pkl := records["data.pkl"]
	if pkl == nil {
		return nil, compiler.BadInput(file, "", fmt.Errorf("%w: the archive has no data.pkl (not a torch.save checkpoint)", compiler.ErrMalformed))
	}
	data, err := readRecord(pkl, size)
	if err == nil {
		err = checkPickle(data)
	}
	if err != nil {
		return nil, compiler.BadInput(file, "data.pkl", fmt.Errorf("%w: %v", compiler.ErrMalformed, err))
	}
	u := pickle.NewUnpickler(bytes.NewReader(data))
	u.FindClass = findTorchClass
	storages := map[string]*rawStorage{}
	u.PersistentLoad = func(id any) (any, error) { return loadStorage(records, size, storages, id) }
	obj, err := u.Load()
	if err != nil {
		return nil, compiler.BadInput(file, "data.pkl", fmt.Errorf("%w: %v", compiler.ErrMalformed, err))
	}
	ck = &TorchCheckpoint{path: file, tensors: map[string]*pytorch.Tensor{}}
	add := func(k, v any) error {
		name, ok := k.(string)
		if !ok {
			return compiler.BadInput(file, "data.pkl", fmt.Errorf("%w: a state dict key is %T, not a name", compiler.ErrMalformed, k))
		}
		if t, ok := v.(*pytorch.Tensor); ok {
			ck.tensors[name] = t
		} else {
			ck.others = append(ck.others, fmt.Sprintf("%s (%T)", name, v))
		}
		return nil
	}
	switch d := obj.(type) {
	case *types.OrderedDict:
		for el := d.List.Front(); el != nil; el = el.Next() {
			e := el.Value.(*types.OrderedDictEntry)
			if err := add(e.Key, e.Value); err != nil {
				return nil, err
			}
		}
	case *types.Dict:
		for _, e := range *d {
			if err := add(e.Key, e.Value); err != nil {
				return nil, err
			}
		}
	default:
		return nil, compiler.BadInput(file, "data.pkl", fmt.Errorf("%w: the pickle holds a %T, not a state dict", compiler.ErrMalformed, obj))
	}
	return ck, nil
}

// findTorchClass resolves the globals a state dict's pickle names. Others
// become gopickle's inert generic classes, whose objects are not tensors.
func findTorchClass(module, name string) (any, error) {
	switch module + "." + name {
	case "torch._utils._rebuild_tensor_v2":
		return &pytorch.RebuildTensorV2{}, nil
	case "collections.OrderedDict":
		return &types.OrderedDictClass{}, nil
	}
	if size, ok := storageKinds[name]; ok && module == "torch" {
		return storageClass{name, size}, nil
	}
	return types.NewGenericClass(module, name), nil
}

// loadStorage reads the storage a persistent id ('storage', class, key,
// location, numel) names, once per key.
func loadStorage(records map[string]*zip.File, size int64, storages map[string]*rawStorage, id any) (any, error) {
	t, ok := id.(*types.Tuple)
	if !ok || t.Len() < 5 || t.Get(0) != "storage" {
		return nil, fmt.Errorf("persistent id %v is not a storage", id)
	}
	class, okC := t.Get(1).(storageClass)
	key, okK := t.Get(2).(string)
	_, okL := t.Get(3).(string) // the device it was saved from
	numel, okN := t.Get(4).(int)
	if !okC || !okK || !okL || !okN || numel < 0 {
		return nil, fmt.Errorf("storage %v: unsupported element type or malformed id", id)
	}
	if s, ok := storages[key]; ok {
		return s, nil
	}
	rec := records["data/"+key]
	if rec == nil {
		return nil, fmt.Errorf("storage %q: no data/%s record", key, key)
	}
	if uint64(numel) > math.MaxInt64/class.bytes || uint64(numel)*class.bytes > rec.UncompressedSize64 {
		return nil, fmt.Errorf("storage %q: %d elements of %d bytes, but its record holds %d bytes", key, numel, class.bytes, rec.UncompressedSize64)
	}
	data, err := readRecord(rec, size)
	if err == nil && uint64(len(data)) < uint64(numel)*class.bytes {
		err = fmt.Errorf("%d bytes, %d elements of %d bytes claimed", len(data), numel, class.bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("storage %q: %v", key, err)
	}
	s := &rawStorage{class: class, data: data[:uint64(numel)*class.bytes]}
	storages[key] = s
	return s, nil
}

// File is the path the tensors came from.
func (c *TorchCheckpoint) File() string { return c.path }

// Names lists the stored tensor names, sorted.
func (c *TorchCheckpoint) Names() []string { return slices.Sorted(maps.Keys(c.tensors)) }

// Weight implements WeightSource as Safetensors.Weight does (the same
// name variants); float16, bfloat16 and float64 storages are converted to
// float32, and a tensor that is a strided view of its storage is copied
// out element by element.
func (c *TorchCheckpoint) Weight(name string, _ []int64) (*compiler.Tensor, error) {
	var stored string
	var src *pytorch.Tensor
	for _, v := range nameVariants(name) {
		if t, ok := c.tensors[v]; ok {
			stored, src = v, t
			break
		}
	}
	if src == nil {
		other := ""
		if len(c.others) > 0 {
			other = fmt.Sprintf("; entries that are not tensors sqc reads: %d, such as %s", len(c.others), c.others[0])
		}
		return nil, compiler.BadInput(c.path, name, fmt.Errorf("%w: no tensor %q (nor under another prefix) among the checkpoint's %d tensors%s",
			compiler.ErrMissingTensor, name, len(c.tensors), other))
	}
	raw, ok := src.Source.(*rawStorage)
	if !ok {
		return nil, compiler.BadInput(c.path, stored, fmt.Errorf("%w: storage %T", compiler.ErrMalformed, src.Source))
	}
	convert, ok := widenStorage[raw.class.name]
	if !ok {
		return nil, compiler.BadInput(c.path, stored, fmt.Errorf("%w: a %s; weights must be float32 (float16, bfloat16 and float64 are converted)",
			compiler.ErrDTypeMismatch, raw.class.name))
	}
	elem := int(raw.class.bytes)
	n := len(raw.data) / elem
	if len(src.Size) != len(src.Stride) || src.StorageOffset < 0 {
		return nil, compiler.BadInput(c.path, stored, fmt.Errorf("%w: size %v, stride %v, offset %d", compiler.ErrMalformed, src.Size, src.Stride, src.StorageOffset))
	}
	// A weight has at most its storage's elements (a stride-0 expanded
	// view, which would have more, is nothing save_pretrained writes), so
	// counting stops there, before anything is allocated or multiplied
	// past it.
	shape := make([]int64, len(src.Size))
	last, count := src.StorageOffset, 1 // the last element's offset, the element count
	for i, d := range src.Size {
		if d < 0 || src.Stride[i] < 0 || (d > 0 && count > n/d) || src.Stride[i] > n {
			return nil, compiler.BadInput(c.path, stored, fmt.Errorf("%w: size %v, stride %v of a %d-element storage", compiler.ErrMalformed, src.Size, src.Stride, n))
		}
		shape[i] = int64(d)
		if d > 0 {
			last += (d - 1) * src.Stride[i]
		}
		count *= d
	}
	if count > 0 && (src.StorageOffset >= n || last >= n || last < 0) {
		return nil, compiler.BadInput(c.path, stored, fmt.Errorf("%w: size %v, stride %v from offset %d reach element %d of a %d-element storage",
			compiler.ErrTruncated, src.Size, src.Stride, src.StorageOffset, last, n))
	}
	t := &compiler.Tensor{DType: compiler.Float32, Shape: shape}
	if contiguous(src.Size, src.Stride) {
		// What save_pretrained writes: the elements in order from the
		// offset, converted in one pass.
		t.F32 = convert(raw.data[src.StorageOffset*elem : (src.StorageOffset+count)*elem])
		return t, nil
	}
	values := convert(raw.data)
	t.F32 = make([]float32, count)
	idx := make([]int, len(shape))
	for e := range t.F32 {
		off := src.StorageOffset
		for i, v := range idx {
			off += v * src.Stride[i]
		}
		t.F32[e] = values[off]
		for i := len(idx) - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < src.Size[i] {
				break
			}
			idx[i] = 0
		}
	}
	return t, nil
}

// widenStorage converts a float storage's little-endian bytes to float32,
// as Safetensors.Weight converts the same dtypes.
var widenStorage = map[string]func([]byte) []float32{
	"FloatStorage":    float32sLE,
	"HalfStorage":     halffloat.Float16.Widen,
	"BFloat16Storage": halffloat.BFloat16.Widen,
	"DoubleStorage":   narrowFloat64sLE,
}

// contiguous reports whether strides are the row-major ones of size.
func contiguous(size, stride []int) bool {
	want := 1
	for i := len(size) - 1; i >= 0; i-- {
		if size[i] != 1 && stride[i] != want {
			return false
		}
		want *= size[i]
	}
	return true
}

// readRecord reads a record of the archive (of size bytes) whole.
// torch.save stores its records uncompressed, so a record's size is
// bounded by the file's; one that claims more, or is compressed, is
// refused before anything is allocated for it.
func readRecord(rec *zip.File, size int64) ([]byte, error) {
	n := rec.UncompressedSize64
	if rec.Method != zip.Store || n != rec.CompressedSize64 {
		return nil, fmt.Errorf("record %s is compressed (torch.save stores its records)", rec.Name)
	}
	off, err := rec.DataOffset()
	if err != nil {
		return nil, err
	}
	if off < 0 || n > uint64(size) || uint64(off) > uint64(size)-n {
		return nil, fmt.Errorf("record %s: %d bytes from byte %d of a %d-byte file", rec.Name, n, off, size)
	}
	r, err := rec.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, err
	}
	return data, nil
}
