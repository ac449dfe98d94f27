# Sourced by .ci scripts: starts a headless sound server in a private folder and exports
# PULSE_SERVER for it. PRACTICED_SOUND_SERVER picks which:
#   pulseaudio (default)  one `pulseaudio -n` with the native protocol on a private socket
#   pipewire              a private session bus, pipewire, wireplumber and pipewire-pulse,
#                         as Raspberry Pi OS and current desktops run them
# Usage: start_sound_server DIR; the caller kills "${sound_server_pids[@]}" when done.
sound_server_pids=()

start_sound_server() {
  local dir=$1 kind=${PRACTICED_SOUND_SERVER:-pulseaudio}
  mkdir -p "$dir/run" "$dir/home"
  chmod 700 "$dir/run"
  case "$kind" in
    pulseaudio)
      # No shared memory with its clients: PulseAudio 16.1 aborted in CI's demo as the daemon
      # it had served was stopped ("Cannot send block reference with non-registered memfd
      # ID", then memblock_replace_import's assertion; upstream issue 824). Copied over the
      # socket, the audio is the same bytes.
      XDG_RUNTIME_DIR="$dir/run" HOME="$dir/home" pulseaudio -n --daemonize=no --exit-idle-time=-1 \
        --use-pid-file=no --disable-shm=yes --log-target="file:$dir/pulse.log" \
        --load="module-native-protocol-unix socket=$dir/native auth-anonymous=1" &
      sound_server_pids+=($!)
      export PULSE_SERVER="unix:$dir/native"
      ;;
    pipewire)
      # wireplumber will not run without a session bus; none of them needs a display.
      local env=(env -u DISPLAY -u WAYLAND_DISPLAY -u PIPEWIRE_REMOTE XDG_RUNTIME_DIR="$dir/run" HOME="$dir/home"
                 DBUS_SESSION_BUS_ADDRESS="unix:path=$dir/bus")
      "${env[@]}" dbus-daemon --session --nofork --nopidfile --address="unix:path=$dir/bus" 2>"$dir/dbus.log" &
      sound_server_pids+=($!)
      "${env[@]}" pipewire 2>"$dir/pipewire.log" &
      sound_server_pids+=($!)
      for _ in $(seq 1 100); do [ -S "$dir/run/pipewire-0" ] && break; sleep 0.1; done
      "${env[@]}" wireplumber 2>"$dir/wireplumber.log" &
      sound_server_pids+=($!)
      "${env[@]}" pipewire-pulse 2>"$dir/pipewire-pulse.log" &
      sound_server_pids+=($!)
      export PULSE_SERVER="unix:$dir/run/pulse/native"
      ;;
    *) echo "PRACTICED_SOUND_SERVER must be pulseaudio or pipewire, not '$kind'" >&2; return 1 ;;
  esac
  for _ in $(seq 1 150); do pactl info >/dev/null 2>&1 && break; sleep 0.1; done
  pactl info >/dev/null || { echo "the $kind server did not answer; its logs are in $dir" >&2; return 1; }
}

# Loads a null sink and waits until clients see its monitor (PipeWire makes the node
# through wireplumber, a moment after pactl returns).
add_null_sink() {
  local name=$1; shift
  pactl load-module module-null-sink sink_name="$name" "$@" >/dev/null
  for _ in $(seq 1 100); do pactl list short sources | grep -q "	$name.monitor	" && return 0; sleep 0.1; done
  echo "the null sink '$name' did not appear" >&2
  return 1
}
