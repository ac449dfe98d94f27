# The speech models' pinned sources, shared by .ci/setup and .ci/package (sourced, not run).
# Each wheel is fetched from PyPI with `pip download --no-deps` and checked by sha256, then
# each file taken out of it is checked by its own sha256.
practiced_model_wheels="
silero-vad==6.2.3 silero_vad-6.2.3-py3-none-any.whl 7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8
pipecat-ai==1.14.0 pipecat_ai-1.14.0-py3-none-any.whl 0352f504b44e78bdf524e45af4bc759601c835b9b7dc195efe5e03384b974a44
"
# wheel file, member, installed name, sha256
practiced_model_files="
silero_vad-6.2.3-py3-none-any.whl silero_vad/data/silero_vad_op18_ifless.onnx silero_vad_op18_ifless.onnx 7671cd04b004e9076da0d4a7b1a5aec36adf161c39230c1cb94a4fd5db6bbd28
pipecat_ai-1.14.0-py3-none-any.whl pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx smart-turn-v3.2-cpu.onnx 2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f
pipecat_ai-1.14.0-py3-none-any.whl pipecat/audio/turn/smart_turn/_whisper_features.py pipecat_whisper_features.py 139b047d10dee42ad5b4894489012e515a882d8f5e2bffe8ad27b30728fc9968
"
# (pipecat's feature code is for the conformance tests only: the package ships the .onnx files.)

practiced_models_present() {
  echo "$practiced_model_files" | while read -r wheel member name digest; do
    [ -n "$wheel" ] || continue
    echo "$digest  $1/$name" | sha256sum -c --status - 2>/dev/null || exit 1
  done
}

practiced_models_fetch() {
  local target=$1 work
  work=$(mktemp -d)
  echo "$practiced_model_wheels" | while read -r requirement wheel digest; do
    [ -n "$requirement" ] || continue
    python3 -m pip download -q --no-deps --disable-pip-version-check -d "$work" "$requirement"
    echo "$digest  $work/$wheel" | sha256sum -c --quiet - || { echo "models: $wheel is not the pinned wheel" >&2; exit 1; }
  done || return 1
  echo "$practiced_model_files" | while read -r wheel member name digest; do
    [ -n "$wheel" ] || continue
    python3 -c 'import sys, zipfile; open(sys.argv[3], "wb").write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
      "$work/$wheel" "$member" "$work/$name"
    echo "$digest  $work/$name" | sha256sum -c --quiet - || { echo "models: $member is not the pinned file" >&2; exit 1; }
    ${sudo_cmd:-} install -m 0644 "$work/$name" "$target/$name"
  done || return 1
  rm -rf "$work"
}

# Run, not sourced: `bash .ci/models.sh DIR` takes the models out of their wheels into DIR
# (for a daemon run from a source checkout: `practiced --speech-models-dir DIR`).
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  target=${1:?usage: bash .ci/models.sh DIR (the directory practiced --speech-models-dir will read)}
  mkdir -p "$target"
  if practiced_models_present "$target"; then
    echo "models: already in $target (sha256 checked)"
  else
    practiced_models_fetch "$target"
    echo "models: Silero VAD and smart-turn v3.2 in $target (each wheel and file checked by sha256)"
  fi
fi
