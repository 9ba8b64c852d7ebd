"""A program that compiles Triton kernels ahead of time for a target (no GPU), as a library inside a program would:
the shipped-ACF tests run it plain, under ``paretotune exec`` and under ``paretotune.shipped_acfs``.

``python shipped_program.py OUT.json SPEC...``; a SPEC is ``FILE:KERNEL:BLOCK:CAPABILITY[:ACF]`` (with ACF: built
with ``ptx_options='--apply-controls ACF'``, Triton's own way, the reference for an applied ACF). Writes
{SPEC: {"text": sha256 of the kernel's machine code, "ptx": the PTX}}. $PROG_SHIP=DIR: each SPEC with an ACF is
added to the shipped folder DIR (``add_compiled``); $PROG_CONTEXT=DIR[:LOG]: compiles run inside
``shipped_acfs(DIR, LOG)``; $PROG_EXIT: the exit code.
"""
import contextlib
import hashlib
import importlib.util
import json
import os
import struct
import sys
from pathlib import Path


def text_section(cubin: bytes, name: str) -> bytes:
    """The ``.text.<name>`` section of a 64-bit ELF: the machine code (other sections name the temporary input)."""
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    entsize, count, names_index = struct.unpack_from("<HHH", cubin, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * entsize) for i in range(count)]
    names = cubin[headers[names_index][4]:headers[names_index][4] + headers[names_index][5]]
    for name_at, _kind, _flags, _addr, offset, size, *_ in headers:
        if names[name_at:names.index(b"\0", name_at)] == f".text.{name}".encode():
            return cubin[offset:offset + size]
    raise KeyError(name)


def main() -> int:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signatures = {"add": {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                  "scale": {"x": "*fp32", "out": "*fp32", "n": "i32", "factor": "fp32", "BLOCK": "constexpr"}}
    out: dict[str, dict[str, str]] = {}
    context = os.environ.get("PROG_CONTEXT")
    with contextlib.ExitStack() as stack:
        if context:
            from paretotune import shipped_acfs

            folder, _, log = context.partition(":")
            stack.enter_context(shipped_acfs(folder, log or None))
        for spec in sys.argv[2:]:
            file, kernel, block, capability, *acf = spec.split(":")
            module_spec = importlib.util.spec_from_file_location(f"k{abs(hash(file))}", file)
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
            options = {"ptx_options": f"--apply-controls {acf[0]}"} if acf else {}
            compiled = triton.compile(ASTSource(getattr(module, kernel), signatures[kernel], {"BLOCK": int(block)}),
                                      target=GPUTarget("cuda", int(capability), 32), options=options)
            out[spec] = {"text": hashlib.sha256(text_section(compiled.asm["cubin"], compiled.name)).hexdigest(),
                         "ptx": compiled.asm["ptx"]}
            if acf and os.environ.get("PROG_SHIP"):
                from paretotune.ship.shipped_acfs import add_compiled

                add_compiled(Path(os.environ["PROG_SHIP"]), compiled, Path(acf[0]).read_bytes(),
                             evidence={"speedup": 1.25, "ci": [1.2, 1.3]})
    Path(sys.argv[1]).write_text(json.dumps(out))
    return int(os.environ.get("PROG_EXIT", "0"))


if __name__ == "__main__":
    sys.exit(main())
