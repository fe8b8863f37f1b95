/* The C example's main: the parity program (cent-ffi/tests/c/parity.c) on the bundle and
 * query batch linked into flash by data.S. Its output must equal the host build's byte for
 * byte (tests/tests/ffi.rs). */
#include <stddef.h>
#include <stdint.h>

#include "parity.h"

extern const uint8_t cent_bundle_start[], cent_bundle_end[];
extern const uint8_t cent_queries_start[], cent_queries_end[];

int main(void) {
    size_t bundle_len = (size_t)(cent_bundle_end - cent_bundle_start);
    size_t queries_len = (size_t)(cent_queries_end - cent_queries_start);
    return cent_parity_run(cent_bundle_start, bundle_len, cent_queries_start, queries_len);
}
