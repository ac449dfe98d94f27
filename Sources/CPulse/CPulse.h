// libpulse and libpulse-simple (apt: libpulse-dev, pkg-config: libpulse-simple).
#include <pulse/simple.h>
#include <pulse/error.h>
#include <pulse/pulseaudio.h>
