"""Shared pieces of the PyTorch reference checks (tests/reference/README.md).

Each check writes a safetensors checkpoint of seeded weights under the Hugging Face names our
loader accepts, runs our f32 graph on it through am_reference_run, computes the same outputs in
float64 with a module written from the published architecture, and holds the two to TOLERANCE.
Every check also runs deliberately wrong variants of the reference, which must MISS the tolerance:
a check that cannot fail proves nothing.

No transformers or safetensors Python packages (Debian 12 ships neither): the safetensors writer
is the format's few lines (an 8-byte little-endian header length, a JSON header, the raw data).
"""

import json
import os
import struct
import subprocess
import sys
import tempfile

SKIP = 77  # CTest SKIP_RETURN_CODE

try:
    import numpy as np
    import torch
except ImportError as e:  # CI installs python3-torch (ops/setup.sh --tests)
    print(f"SKIPPED: PyTorch or NumPy is not importable ({e}); "
          "install python3-torch python3-numpy (ops/setup.sh --tests)")
    sys.exit(SKIP)

torch.set_default_dtype(torch.float64)

# The binding tolerance (DECISIONS.md "Correctness references"): relative Frobenius error of our
# f32 output against the float64 reference.
TOLERANCE = 1e-5


def rel_frobenius(ours, ref):
    ours = torch.as_tensor(ours, dtype=torch.float64)
    ref = torch.as_tensor(ref, dtype=torch.float64)
    return float(torch.linalg.norm(ours - ref) / torch.linalg.norm(ref))


_DTYPES = {"F32": (torch.float32, "<f4"), "F16": (torch.float16, "<f2"), "BF16": (torch.bfloat16, None)}


def _raw(t, dtype):
    t = t.detach().to(_DTYPES[dtype][0]).contiguous()
    if dtype == "BF16":  # NumPy has no bfloat16: its 16 bits are the top half of the float32's
        return (t.to(torch.float32).numpy().view("<u4") >> 16).astype("<u2").tobytes()
    return t.numpy().astype(_DTYPES[dtype][1]).tobytes()


def write_safetensors(path, tensors, metadata=None, dtype="F32"):
    """tensors: name -> torch tensor, written as `dtype` (F32, F16 or BF16)."""
    header = {}
    blobs = []
    offset = 0
    for name, t in tensors.items():
        data = _raw(t, dtype)
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = metadata
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for b in blobs:
            f.write(b)


def write_hf_checkpoint(directory, tensors, config, shards=1, dtype="F32", weights="model.safetensors"):
    """A checkpoint directory as transformers' save_pretrained() writes one: config.json and
    model.safetensors (diffusers: diffusion_pytorch_model.safetensors), or `shards`
    model-0000i-of-0000n.safetensors files listed by model.safetensors.index.json (its weight_map)."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    names = list(tensors)
    if shards == 1:
        write_safetensors(os.path.join(directory, weights), tensors, {"format": "pt"}, dtype)
        return
    weight_map = {}
    for i in range(shards):
        part = names[i::shards]
        file = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        write_safetensors(os.path.join(directory, file), {n: tensors[n] for n in part}, {"format": "pt"}, dtype)
        weight_map.update({n: file for n in part})
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=2)


def as_stored(tensors, dtype="F32"):
    """The checkpoint's values as our loader sees them (rounded to `dtype`), in float64: the
    reference computes on exactly the weights our graph holds, so the comparison measures
    computation only."""
    return {k: v.to(_DTYPES[dtype][0]).to(torch.float64) for k, v in tensors.items()}


class Check:
    """One family's check: runs ours, compares with the reference and the wrong variants."""

    def __init__(self, runner, family, title):
        self.runner = runner
        self.family = family
        self.title = title
        self.tmp = tempfile.TemporaryDirectory(prefix="am_reference_")
        self.failures = []
        self.rows = []

    def run_ours(self, case, config, tensors, inputs, rows, cols, hf_config=None, shards=1, dtype="F32",
                 weights="model.safetensors"):
        """Runs our graph on `tensors`: written as one .safetensors file with `config` as the
        catalog config, or, with hf_config, as a Hugging Face checkpoint directory (config.json,
        `shards` shards of `dtype`) whose config.json must override `config`'s architecture keys."""
        d = self.tmp.name
        if hf_config is None:
            ckpt = os.path.join(d, f"{case}.safetensors")
            write_safetensors(ckpt, tensors, {"format": "pt"})
        else:
            ckpt = os.path.join(d, case)
            write_hf_checkpoint(ckpt, tensors, hf_config, shards, dtype, weights)
        cfg = dict(config, weights_path=ckpt)
        paths = {k: os.path.join(d, f"{case}.{k}") for k in ("config.json", "input.json", "out.f32")}
        with open(paths["config.json"], "w") as f:
            json.dump(cfg, f)
        with open(paths["input.json"], "w") as f:
            json.dump(inputs, f)
        proc = subprocess.run([self.runner, self.family, paths["config.json"], paths["input.json"], paths["out.f32"]],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"am_reference_run failed ({proc.returncode}): {proc.stderr.strip()}")
        out = np.fromfile(paths["out.f32"], dtype="<f4")
        if out.size != rows * cols:
            raise RuntimeError(f"am_reference_run wrote {out.size} floats, expected {rows}x{cols}")
        return torch.from_numpy(out.astype(np.float64)).reshape(rows, cols)

    def compare(self, case, ours, reference, variants):
        """reference: the float64 output; variants: name -> output of a deliberately wrong reference."""
        err = rel_frobenius(ours, reference)
        ok = err <= TOLERANCE
        self.rows.append((case, "reference", err, "ok" if ok else "FAIL (above tolerance)"))
        if not ok:
            self.failures.append(f"{case}: relative error {err:.3g} > tolerance {TOLERANCE:g}")
        for name, out in variants.items():
            verr = rel_frobenius(ours, out)
            missed = not verr <= TOLERANCE  # NaN/Inf from a variant counts as missed
            self.rows.append((case, name, verr, "ok (missed, as it must)" if missed else "FAIL (within tolerance)"))
            if not missed:
                self.failures.append(f"{case}: wrong variant '{name}' passes ({verr:.3g} <= {TOLERANCE:g}): "
                                     "the check cannot see that mistake")

    def finish(self):
        print(f"{self.title}: tolerance {TOLERANCE:g} (relative Frobenius, ours f32 vs PyTorch float64)")
        for case, name, err, verdict in self.rows:
            print(f"  {case:<28} {name:<50} {err:10.3e}  {verdict}")
        self.tmp.cleanup()
        if self.failures:
            print("FAILED:\n  " + "\n  ".join(self.failures))
            return 1
        return 0
