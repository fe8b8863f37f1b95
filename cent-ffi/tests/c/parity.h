/* The parity program shared by the host test (host.c) and the Cortex-M4F example
 * (firmware/c-example): explains every query of a batch through the C API and prints one
 * canonical line each, then exercises the API's refusals. Same bytes in, same text out. */
#ifndef CENT_PARITY_H
#define CENT_PARITY_H

#include <stddef.h>
#include <stdint.h>

/* Runs on `bundle` and the query batch `queries` (firmware/data/queries.bin: a u32 column
 * count, then rows of f32, all little-endian) and prints to stdout. Returns 0 when every call
 * returned what it should, 1 otherwise. */
int cent_parity_run(const uint8_t *bundle, size_t bundle_len, const uint8_t *queries, size_t queries_len);

#endif
