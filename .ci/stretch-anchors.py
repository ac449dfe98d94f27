"""The slower replay beside its anchors, in one run (`bash .ci/proof stretch`).

Each stretcher slows recorded voices to 0.5, 0.6, 0.75 and 0.85 and speeds them back by
1/r: the round trip scored by wideband PESQ (PyPI's pesq) against the original, the slowed
voice's median pitch by Praat's tracker (PyPI's praat-parselmouth) against the original's,
and its speed as seconds of audio per second of one process on one thread (file in, file
out, start-up included for every tool alike). Two sets: the tuning voices the stretcher's
parameters were chosen on (asterisk's four readers) and held-out ones (codec2's readers and
radio amateurs, CMU ARCTIC, French and Colombian Spanish prompts).
usage: stretch-anchors.py AUDIOKERNEL_DEMO WORKDIR"""
import os, subprocess, sys, time, wave
import numpy as np, parselmouth
from pesq import pesq

DEMO, WORK = sys.argv[1], sys.argv[2]
RATES = [0.5, 0.6, 0.75, 0.85]
SNDS, CODEC2, VOICES = "/usr/share/asterisk/sounds", "/usr/share/codec2/raw", "/opt/practiced-ci/voices"
SETS = {
    "tuning": [("Allison", ["-f", "g722", "-i", f"{SNDS}/en_US_f_Allison/demo-congrats.g722"]),
               ("June", ["-f", "g722", "-i", f"{SNDS}/fr_CA_f_June/demo-congrats.g722"]),
               ("Carlo", ["-f", "g722", "-i", f"{SNDS}/it_IT_m_Carlo/demo-congrats.g722"]),
               ("IvrvoiceRU", ["-f", "g722", "-i", f"{SNDS}/ru_RU_f_IvrvoiceRU/demo-congrats.g722"])],
    "held-out": [(n, ["-f", "s16le", "-ar", "8000", "-ac", "1", "-i", f"{CODEC2}/{n}.raw"]) for n in ["hts1", "hts2", "g3plx", "ve9qrp", "kristoff"]]
                + [("ARCTIC a0007", ["-i", f"{VOICES}/arctic-a0007.wav"]), ("ARCTIC a0009", ["-i", f"{VOICES}/arctic-a0009.wav"]),
                   ("Armelle", ["-i", f"{SNDS}/fr/vm-options.gsm"]), ("es-co", ["-i", f"{SNDS}/es/vm-options.gsm"])],
}
TOOLS = {
    "AudioKernel": lambda a, b, r: [DEMO, "stretch", a, b, "--rate", str(r)],
    "rubberband R3 (--fine)": lambda a, b, r: ["rubberband", "-q", "--fine", "-T", str(r), a, b],
    "rubberband R2": lambda a, b, r: ["rubberband", "-q", "-T", str(r), a, b],
    "sox tempo -s": lambda a, b, r: ["sox", a, b, "tempo", "-s", str(r)],
    "ffmpeg atempo": lambda a, b, r: ["ffmpeg", "-v", "error", "-y", "-threads", "1", "-i", a, "-af", f"atempo={r}", "-c:a", "pcm_s16le", b],
}

def pcm(path, rate):
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-af", f"aresample={rate}:resampler=soxr:precision=28",
                          "-ac", "1", "-f", "s16le", "-"], capture_output=True, check=True).stdout
    return np.frombuffer(raw, dtype=np.int16).astype(float)

def pitch(path):
    f = parselmouth.Sound(path).to_pitch().selected_array["frequency"]
    return float(np.median(f[f > 0]))

os.makedirs(WORK, exist_ok=True)
for set_name, voices in SETS.items():
    files = []
    for name, source in voices:
        path = os.path.join(WORK, f"{set_name}-{len(files)}.wav")
        subprocess.run(["ffmpeg", "-v", "error", "-y"] + source + ["-t", "8", "-ar", "24000", "-ac", "1", "-c:a", "pcm_s16le", path], check=True)
        files.append(path)
    print(f"\n{set_name}: {len(files)} voices ({', '.join(n for n, _ in voices)}), 8 s each")
    print("| stretcher | " + " | ".join(f"PESQ {r}" for r in RATES) + " | pitch, worst voice | speed (× real time) |")
    print("|---|" + "---|" * (len(RATES) + 2))
    for tool, command in TOOLS.items():
        scores, pitches, speeds = {r: [] for r in RATES}, [], []
        for k, original in enumerate(files):
            seconds = len(pcm(original, 24000)) / 24000
            f0 = pitch(original)
            for r in RATES:
                slowed, back = f"{original}.{k}.{r}.wav", f"{original}.{k}.{r}.back.wav"
                start = time.perf_counter()
                subprocess.run(command(original, slowed, r), check=True, capture_output=True)
                speeds.append(seconds / (time.perf_counter() - start))
                subprocess.run(command(slowed, back, 1 / r), check=True, capture_output=True)
                a, b = pcm(original, 16000), pcm(back, 16000)
                n = min(len(a), len(b))
                scores[r].append(pesq(16000, a[:n], b[:n], "wb"))
                pitches.append(abs(pitch(slowed) / f0 - 1))
        print(f"| {tool} | " + " | ".join(f"{np.mean(scores[r]):.2f}" for r in RATES)
              + f" | {100 * max(pitches):.1f} % | {np.median(speeds):.0f} |", flush=True)
