// libpulse's asynchronous API (apt: libpulse-dev, pkg-config: libpulse). Not libpulse-simple:
// its blocking read cannot be interrupted (see PulseStream), so nothing links it.
#include <pulse/error.h>
#include <pulse/pulseaudio.h>
