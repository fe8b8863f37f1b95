/* Runs the README's example (example.c) on a bundle and the first query of a batch:
 * example_main BUNDLE QUERIES. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cent.h"

int explain_one(const uint8_t *bytes, size_t len, const float *x, size_t columns);

static unsigned char *slurp(const char *path, long *size) {
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    if (!f || fseek(f, 0, SEEK_END) != 0 || (*size = ftell(f)) < 4 || fseek(f, 0, SEEK_SET) != 0)
        return NULL;
    buf = malloc((size_t)*size);
    if (buf && fread(buf, 1, (size_t)*size, f) != (size_t)*size)
        buf = NULL;
    fclose(f);
    return buf;
}

int main(int argc, char **argv) {
    long bundle_len, queries_len;
    unsigned char *bundle, *queries;
    float x[CENT_MAX_COLUMNS];
    uint32_t columns;
    if (argc != 3 || !(bundle = slurp(argv[1], &bundle_len)) || !(queries = slurp(argv[2], &queries_len)))
        return 2;
    memcpy(&columns, queries, 4); /* little-endian hosts only, as the batch format */
    if (columns > CENT_MAX_COLUMNS || queries_len < 4 + 4 * (long)columns)
        return 2;
    memcpy(x, queries + 4, 4 * columns);
    return explain_one(bundle, (size_t)bundle_len, x, columns);
}
