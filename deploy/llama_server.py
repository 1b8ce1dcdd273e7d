"""llama.cpp's OpenAI-compatible server in this process, from the prebuilt `xllamacpp` wheel.

xllamacpp compiles llama.cpp's own `llama-server` code (its HTTP routes, request validation and
context-size errors) into a Python extension, so no C++ build is needed. `deploy/llama.sh`
starts this script in the background; it serves until SIGTERM or SIGINT.
"""

import argparse
import signal
import sys

import xllamacpp


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="the GGUF file")
    parser.add_argument("--alias", required=True, help="the model name clients send")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ctx-size", type=int, required=True, help="the context in tokens")
    parser.add_argument("--n-predict", type=int, required=True, help="the most tokens a reply has")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--chat-template-file", required=True, help="a Jinja chat template")
    args = parser.parse_args()

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    # One slot: every request gets the whole window, as a hosted model's context.
    params.n_ctx = args.ctx_size
    params.n_parallel = 1
    params.n_predict = args.n_predict
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    with open(args.chat_template_file, encoding="utf-8") as template:
        params.chat_template = template.read()
    params.use_jinja = True
    params.ui = False

    stop = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)  # blocked before the server's threads start
    server = xllamacpp.Server(params)
    print(f"llama_server: listening on {server.listening_address}", flush=True)
    signal.sigwait(stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
