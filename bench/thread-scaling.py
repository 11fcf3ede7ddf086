"""How each bc-v1 network alone scales over intra-op threads on this CPU (docs/performance.md "Low load").

Run: bench/.venv/bin/python bench/thread-scaling.py   (the venv `npm run bench` installs for its peers)
"""
import threading
import time

import numpy as np
import onnxruntime as ort

MODELS = ["models/bc-v1/ssd_mobilenetv2_oidv4.int8.onnx", "models/bc-v1/mobilenetv2-12-int8.onnx"]
RUNS = 60


def session(path, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0" if threads == 1 else "1")
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def mean_ms(run):
    for _ in range(5):
        run()
    start = time.perf_counter()
    for _ in range(RUNS):
        run()
    return (time.perf_counter() - start) / RUNS * 1000


for path in MODELS:
    one, two, other = session(path, 1), session(path, 2), session(path, 1)
    spec = one.get_inputs()[0]
    shape = [d if isinstance(d, int) else 1 for d in spec.shape]
    feed = {spec.name: np.random.rand(*shape).astype(np.float32)}
    single = mean_ms(lambda: one.run(None, feed))
    double = mean_ms(lambda: two.run(None, feed))
    side = []
    workers = [threading.Thread(target=lambda s=s: side.append(mean_ms(lambda: s.run(None, feed)))) for s in (one, other)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    print(f"{path}: 1 thread {single:.2f} ms, 2 threads {double:.2f} ms ({single / double:.2f}x); "
          f"two 1-thread sessions side by side {side[0]:.2f} / {side[1]:.2f} ms")
