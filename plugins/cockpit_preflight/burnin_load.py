"""The bundled burn-in load: back-to-back matmuls on every GPU of the node for a set time.

Run by the burnin job's task on each node (the check ships this file's text in
the job script, so the nodes need torch, not cockpit). One thread per GPU
(torch releases the GIL inside a matmul); where torch sees no GPU it loads the
CPU instead (the test cluster). Prints one JSON line per device and interval,
and a final line per device with ``"final": true``:
``{"device": "cuda:0", "name": ..., "tflops": ..., "iters": ..., "seconds": ...}``.
Exits 2 when a device failed (its line carries ``"error"``).
"""

import argparse
import json
import sys
import threading
import time


def _load(torch, device, name, n, seconds, interval, out, lock, errors):
    try:
        dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        sync = (lambda: torch.cuda.synchronize(device)) if device.startswith("cuda") else (lambda: None)
        start = last = time.monotonic()
        iters = done = 0
        while time.monotonic() - start < seconds:
            torch.matmul(a, b)
            iters += 1
            if iters % 8 == 0:
                sync()
                now = time.monotonic()
                if now - last >= interval:
                    rate = 2.0 * n ** 3 * (iters - done) / (now - last) / 1e12
                    with lock:
                        out.write(json.dumps({"device": device, "name": name, "tflops": rate, "t": time.time()}) + "\n")
                        out.flush()
                    last, done = now, iters
        sync()
        took = time.monotonic() - start
        line = {"device": device, "name": name, "tflops": 2.0 * n ** 3 * iters / took / 1e12, "iters": iters,
                "seconds": took, "matrix": n, "final": True}
    except Exception as exc:  # the line names the device and the error; the exit status says so
        errors.append(device)
        line = {"device": device, "name": name, "error": f"{type(exc).__name__}: {exc}", "final": True}
    with lock:
        out.write(json.dumps(line) + "\n")
        out.flush()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, required=True)
    p.add_argument("--matrix", type=int, default=8192)
    p.add_argument("--cpu-matrix", type=int, default=512)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--interval", type=float, default=5.0)
    args = p.parse_args(argv)
    import torch

    if torch.cuda.is_available() and torch.cuda.device_count():
        devices = [(f"cuda:{i}", torch.cuda.get_device_name(i)) for i in range(torch.cuda.device_count())]
        n = args.matrix
    else:
        torch.set_num_threads(max(1, args.threads))
        devices, n = [("cpu", "cpu")], args.cpu_matrix
    lock, errors = threading.Lock(), []
    threads = [threading.Thread(target=_load, args=(torch, d, name, n, args.duration, args.interval, sys.stdout,
                                                    lock, errors)) for d, name in devices]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return 2 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
