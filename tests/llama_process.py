"""A llama.cpp server (PyPI xllamacpp) in a process of its own, until SIGTERM:
`python tests/llama_process.py MODEL PORT SLOTS THREADS N_PREDICT` (tests/conftest.py,
`_serve_llama`, starts it).

Why a process of its own: the tests' client and the server then share the machine's cores but
nothing else. In the pytest process the server's speed followed the client's: a one-slot
server's level of 2 calls at once came out with a p95 from 748 to 959 ms in rounds of 40 calls,
its level of 3 from 869 to 1,200 ms (they overlap), against 821-855 and 1,117-1,139 ms with the
server in its own process (tests/test_llm_capacity.py, `_queued_third`). bench/llm_peers.py
serves it the same way.
"""

from __future__ import annotations

import signal
import sys


def main(model: str, port: int, slots: int, threads: int, n_predict: int) -> None:
    import xllamacpp  # only this process loads the model

    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    params = xllamacpp.CommonParams()
    params.model.path = model
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = 2048
    params.n_parallel = slots
    params.n_predict = n_predict
    params.cpuparams.n_threads = threads
    server = xllamacpp.Server(params)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    del server  # the server stops in its destructor (it joins its main loop there)


if __name__ == "__main__":
    model, port, slots, threads, n_predict = sys.argv[1:6]
    main(model, int(port), int(slots), int(threads), int(n_predict))
