#!/usr/bin/env bash
# Makes practice-sim's reply phrases and the learner phrases the tests speak: espeak-ng
# speech resampled by sox to the backend's format (PCM16, 24 kHz, mono WAV). The output is
# committed under samples/sim, so practice-sim needs neither tool at run time; run this again
# only to change the phrases.
set -euo pipefail
cd "$(dirname "$0")/.."
out=sim
mkdir -p "$out"
say() {  # name voice text
  local tmp; tmp="$(mktemp --suffix=.wav)"
  espeak-ng -v "$2" -s 150 -w "$tmp" "$3"
  sox "$tmp" -r 24000 -c 1 -b 16 -e signed-integer "$out/$1.wav" norm -3
  rm -f "$tmp"
}
say greeting        en-us "Hello! Nice to meet you. What would you like to talk about today?"
say reply-1         en-us "That sounds great. Can you tell me more about it?"
say reply-2         en-us "Interesting! How did that make you feel?"
say reply-3         en-us "I see. What would you do differently next time?"
say reply-4         en-us "Good point. Do you often do that on weekends?"
say review-1        en-us "Let's practice that again. Try saying it in the past tense."
say sorry           en-us "Sorry, I didn't catch that. Could you say it again?"
say learner-1       en-gb "Yesterday I go to the market and buy some apples."
say learner-2       en-gb "I am working in an office since three years."
