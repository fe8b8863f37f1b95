/* The parity program on the host: reads a bundle and a query batch from files and runs
 * parity.c. Usage: host BUNDLE QUERIES (e.g. firmware/data/bundle.cent firmware/data/queries.bin). */
#include <stdio.h>
#include <stdlib.h>

#include "parity.h"

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    long size;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc(size ? (size_t)size : 1);
        if (buf && fread(buf, 1, (size_t)size, f) != (size_t)size) {
            free(buf);
            buf = NULL;
        }
        *len = (size_t)size;
    }
    fclose(f);
    return buf;
}

int main(int argc, char **argv) {
    size_t bundle_len = 0, queries_len = 0;
    unsigned char *bundle, *queries;
    int code;
    if (argc != 3) {
        fprintf(stderr, "usage: %s BUNDLE QUERIES\n", argv[0]);
        return 2;
    }
    bundle = slurp(argv[1], &bundle_len);
    queries = slurp(argv[2], &queries_len);
    if (!bundle || !queries) {
        fprintf(stderr, "cannot read %s or %s\n", argv[1], argv[2]);
        return 2;
    }
    code = cent_parity_run(bundle, bundle_len, queries, queries_len);
    free(bundle);
    free(queries);
    return code;
}
