// alsa-lib (apt: libasound2-dev, pkg-config: alsa).
#include <alsa/asoundlib.h>
