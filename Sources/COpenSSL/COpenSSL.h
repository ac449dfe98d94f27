// The system's OpenSSL (apt: libssl-dev, pkg-config: openssl): TLS for https:// backends.
// It is the library FoundationNetworking's libcurl already loads on Debian.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/evp.h>
