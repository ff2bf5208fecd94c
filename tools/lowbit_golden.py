"""Helpers shared by the low-bit golden generators (gen_golden_lowbit_*.py): float bits and
hashes for the files, the hashed input rows the tests rebuild (tests/numerics/low_bit_inputs.hpp
is the C++ twin of `random_rows`), and the loaders of the peers that do not install from PyPI
or do not run on a CPU as shipped. The loaders only import the peers' own files and put stand-ins
where those files reach for a GPU or a compiled extension; every number comes from the peer's
code."""

import contextlib
import importlib
import os
import subprocess
import sys
import types
import warnings

# The environment every golden file is made in: torch on the CPU, its AVX2 kernels (their
# reduction order is what the tests reproduce). Set before the generator imports torch.
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")
warnings.simplefilter("ignore")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from index_hash import index_hash  # noqa: E402

F = np.float32
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN_DIR = os.path.join(REPO, "tests", "data", "golden")


def fnv1a64(a):
    """FNV-1a 64 of the little-endian float32 bits of `a` (the tests recompute it)."""
    h = 0xCBF29CE484222325
    for b in np.ascontiguousarray(a, dtype="<f4").tobytes():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def fnv1a64_nan_canonical(a):
    """fnv1a64 with every NaN as 0x7fc00000: NaN-ness compared, not the payload the peer's
    arithmetic happened to leave (tests/numerics/low_bit_inputs.hpp does the same)."""
    a = np.ascontiguousarray(a, dtype=np.float32).copy()
    a[np.isnan(a)] = np.uint32(0x7FC00000).view(np.float32)
    return fnv1a64(a)


def bits(a):
    """The float32 bit patterns of `a`, flattened, as Python ints (the files' "f32" lists)."""
    return [int(v) for v in np.ascontiguousarray(a, dtype=np.float32).reshape(-1).view(np.uint32)]


def tensor(a):
    return {"shape": list(np.shape(a)), "f32": bits(a)}


def random_rows(seed, rows, cols):
    """(rows, cols) float32: uniform in (-1, 1) from index_hash, a power-of-two scale per row
    from 2^-20 to 2^20, and one value in 97 times 37 (an outlier inside its block)."""
    h = index_hash(rows * cols, seed).astype(np.float64)
    h2 = index_hash(rows * cols, seed + 7)
    u = ((h / 4294967296.0) * 2.0 - 1.0).astype(np.float32)
    row_scale = np.ldexp(np.float32(1.0), ((h2.reshape(rows, cols)[:, 0] % 41).astype(np.int32) - 20))
    x = u.reshape(rows, cols) * row_scale[:, None].astype(np.float32)
    heavy = (h2.reshape(rows, cols) % 97) == 0
    return np.where(heavy, x * np.float32(37.0), x).astype(np.float32)


def random_unit(seed, n):
    """n float32 in (-1, 1) from index_hash (the incoming gradients dy)."""
    h = index_hash(n, seed).astype(np.float64)
    return ((h / 4294967296.0) * 2.0 - 1.0).astype(np.float32)


def write_json(directory, name, content):
    """Writes a golden file the way every generator does (compact, keys sorted: a second run
    is byte-identical) and says where and how big."""
    import json
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        json.dump(content, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print("wrote", path, len(content.get("cases", [])), "cases", os.path.getsize(path), "bytes")
    return path


def git_commit(path):
    return subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


def load_transformer_engine(path):
    """TransformerEngine's pure-PyTorch reference recipes (transformer_engine/pytorch/custom_recipes/
    reference_nvfp4.py, reference_current_scaling.py) from a checkout at `path`, without building
    TE: the two base classes they derive from (quantized_tensor.Quantizer, QuantizedTensorStorage,
    whose module loads TE's CUDA extension) are stood in for by classes that keep the usage flags,
    and custom_recipes.gemm (only their GEMMs use it) by an empty module."""
    te = types.ModuleType("transformer_engine")
    te.__path__ = []
    tp = types.ModuleType("transformer_engine.pytorch")
    tp.__path__ = []
    qt = types.ModuleType("transformer_engine.pytorch.quantized_tensor")

    class Quantizer:
        def __init__(self, *, rowwise=True, columnwise=True):
            self.rowwise_usage = rowwise
            self.columnwise_usage = columnwise

    class QuantizedTensorStorage:
        pass

    qt.Quantizer = Quantizer
    qt.QuantizedTensorStorage = QuantizedTensorStorage
    cr = types.ModuleType("transformer_engine.pytorch.custom_recipes")
    cr.__path__ = [os.path.join(path, "transformer_engine", "pytorch", "custom_recipes")]
    gemm = types.ModuleType("transformer_engine.pytorch.custom_recipes.gemm")
    gemm.MMParams = object
    gemm.GEMMType = types.SimpleNamespace(FPROP=None, DGRAD=None, WGRAD=None)
    for m in (te, tp, qt, cr, gemm):
        sys.modules[m.__name__] = m
    te.pytorch, tp.quantized_tensor, tp.custom_recipes, cr.gemm = tp, qt, cr, gemm
    cr.reference_utils = importlib.import_module("transformer_engine.pytorch.custom_recipes.reference_utils")
    nvfp4 = importlib.import_module("transformer_engine.pytorch.custom_recipes.reference_nvfp4")
    current = importlib.import_module("transformer_engine.pytorch.custom_recipes.reference_current_scaling")
    return nvfp4, current, cr.reference_utils


def load_modelopt_triton():
    """ModelOpt's NVFP4 Triton fake quantization (`tensor_quant.static_blockwise_fp4_fake_quant`:
    the autograd function over `kernels/quantization/gemm/fp4_kernel.py` and
    `kernels/quantization/common/nvfp4_quant.py`) on the CPU under Triton's interpreter
    (TRITON_INTERPRET=1, set before triton is imported). ModelOpt only exposes its Triton kernels
    when CUDA is present, so they are put in place here; `torch.cuda.device(x.device)` becomes a
    no-op; and libdevice.isnan (a CUDA intrinsic the interpreter has no numpy twin for) becomes its
    definition, v != v."""
    assert os.environ.get("TRITON_INTERPRET") == "1", "set TRITON_INTERPRET=1 before importing torch"
    import torch

    torch.cuda.device = lambda _device: contextlib.nullcontext()
    gemm = importlib.import_module("modelopt.torch.kernels.quantization.gemm")
    fp4_kernel = importlib.import_module("modelopt.torch.kernels.quantization.gemm.fp4_kernel")
    nvfp4_quant = importlib.import_module("modelopt.torch.kernels.quantization.common.nvfp4_quant")
    nvfp4_quant.libdevice = types.SimpleNamespace(isnan=lambda v: v != v)
    for name in fp4_kernel.__all__:
        setattr(gemm, name, getattr(fp4_kernel, name))
    gemm.IS_AVAILABLE = True
    tensor_quant = importlib.import_module("modelopt.torch.quantization.tensor_quant")
    return tensor_quant.static_blockwise_fp4_fake_quant
