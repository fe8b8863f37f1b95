/* See parity.h. Output, one line each:
 *   q=<i> ...            the firmware protocol: query i, seed i, default options (the same
 *                        canonical line as cent_nostd::atlas::Line and the Rust firmware)
 *   done queries=<n>
 *   c q=<i> ...          the first queries again with constraints, costs and fewer answers
 *   status <case>: <code> <description>   each refusal the API must make
 * Integers only (floats as their bit patterns), so printf needs no float support. */
#include "parity.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cent.h"

/* Caller-owned storage: zeroed statics, no allocator. */
static CentBundle bundle;
static CentScratch scratch;
static CentResult result;
static float row[CENT_MAX_COLUMNS];
static float values[CENT_MAX_COLUMNS];

static int failures;

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t bits(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

static const char *reason(CentNotFound n) {
    switch (n) {
    case CENT_NOT_FOUND_NO_CONTRAST_LEAF: return " not_found=NoContrastLeaf";
    case CENT_NOT_FOUND_BLOCKED: return " not_found=Blocked";
    case CENT_NOT_FOUND_NOT_CONFIRMED: return " not_found=NotConfirmed";
    default: return "";
    }
}

/* Prints the outcome in `result` as the canonical line of query `index`. */
static void print_line(const char *prefix, size_t index, CentStatus status) {
    CentSummary s;
    if (status != CENT_STATUS_OK) {
        printf("%sq=%u error=%s\n", prefix, (unsigned)index, cent_status_str(status));
        return;
    }
    if (cent_result_summary(&result, &s) != CENT_STATUS_OK) {
        failures++;
        return;
    }
    printf("%sq=%u anchor=%u fact=%u examined=%u rejected=%u n=%" PRIu32 "%s", prefix, (unsigned)index,
           s.anchor, s.fact, s.examined, s.rejected, s.answers, reason(s.not_found));
    for (uint32_t k = 0; k < s.answers; k++) {
        CentAnswer a;
        if (cent_result_answer(&result, k, &a) != CENT_STATUS_OK ||
            cent_result_values(&result, k, values, CENT_MAX_COLUMNS) != CENT_STATUS_OK) {
            failures++;
            break;
        }
        printf(" | leaf=%u cost=%" PRIu32 " class=", a.leaf, a.cost);
        if (a.class_id < 0)
            printf("-");
        else
            printf("%d", a.class_id);
        printf(" changed=%" PRIx32 " x=", a.changed);
        for (uint32_t j = 0; j < s.columns; j++)
            printf("%s%08" PRIx32, j ? "," : "", bits(values[j]));
    }
    printf("\n");
}

/* Prints a refusal and counts it as a failure unless it is the expected status. */
static void expect(const char *name, CentStatus got, CentStatus want) {
    printf("status %s: %d %s\n", name, (int)got, cent_status_str(got));
    if (got != want)
        failures++;
}

/* Every refusal of the API, on small inputs (no copy of the bundle: RAM is scarce). */
static void refusals(const float *x, size_t columns) {
    static const uint8_t not_a_bundle[] = "not a bundle";
    /* Headers of format version 9; of this library's version with a 1-byte payload whose
     * CRC-32 is wrong; and of a payload 0xFF with its right CRC-32 (0xFF000000) that does not
     * decode. */
    static const uint8_t version[] = {'C', 'E', 'N', 'T', 9, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xFF};
    static const uint8_t checksum[] = {'C', 'E', 'N', 'T', CENT_BUNDLE_VERSION & 0xFF, CENT_BUNDLE_VERSION >> 8,
                                       1, 0, 0, 0, 0, 0, 0, 0, 0xFF};
    static const uint8_t malformed[] = {'C', 'E', 'N', 'T', CENT_BUNDLE_VERSION & 0xFF, CENT_BUNDLE_VERSION >> 8,
                                        1, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    static CentBundle other;
    CentOptions options = cent_options_default();
    CentAnswer answer;
    CentBundleInfo info;

    expect("bad-magic", cent_bundle_open(&other, not_a_bundle, sizeof not_a_bundle - 1), CENT_STATUS_BAD_MAGIC);
    expect("bad-version", cent_bundle_open(&other, version, sizeof version), CENT_STATUS_BAD_VERSION);
    expect("truncated", cent_bundle_open(&other, checksum, 10), CENT_STATUS_BAD_LENGTH);
    expect("corrupted", cent_bundle_open(&other, checksum, sizeof checksum), CENT_STATUS_BAD_CHECKSUM);
    expect("malformed", cent_bundle_open(&other, malformed, sizeof malformed), CENT_STATUS_MALFORMED);
    expect("null-bytes", cent_bundle_open(&other, NULL, 16), CENT_STATUS_NULL_POINTER);
    expect("null-storage", cent_bundle_open(NULL, checksum, sizeof checksum), CENT_STATUS_NULL_POINTER);
    expect("not-open", cent_explain(&other, x, columns, &options, &scratch, &result), CENT_STATUS_NOT_OPEN);
    expect("not-open-info", cent_bundle_info(&other, &info), CENT_STATUS_NOT_OPEN);
    expect("null-query", cent_explain(&bundle, NULL, columns, &options, &scratch, &result), CENT_STATUS_NULL_POINTER);
    expect("null-options", cent_explain(&bundle, x, columns, NULL, &scratch, &result), CENT_STATUS_NULL_POINTER);
    expect("null-scratch", cent_explain(&bundle, x, columns, &options, NULL, &result), CENT_STATUS_NULL_POINTER);
    expect("short-query", cent_explain(&bundle, x, columns - 1, &options, &scratch, &result), CENT_STATUS_QUERY_LENGTH);
    expect("no-result", cent_result_answer(&result, 0, &answer), CENT_STATUS_NO_RESULT);
    expect("overlap", cent_explain(&bundle, x, columns, &options, &scratch, (CentResult *)&scratch), CENT_STATUS_OVERLAP);
    options.answers = 0;
    expect("zero-answers", cent_explain(&bundle, x, columns, &options, &scratch, &result), CENT_STATUS_INVALID_OPTIONS);
    options = cent_options_default();
    options.immutable = UINT32_C(1) << 31;
    expect("unknown-feature", cent_explain(&bundle, x, columns, &options, &scratch, &result), CENT_STATUS_INVALID_OPTIONS);
    options = cent_options_default();
    options.desired_class = 200;
    expect("unknown-class", cent_explain(&bundle, x, columns, &options, &scratch, &result), CENT_STATUS_TARGET);
    options = cent_options_default();
    memcpy(row, x, columns * sizeof row[0]);
    row[0] = 0.0f / 0.0f;
    expect("nan-query", cent_explain(&bundle, row, columns, &options, &scratch, &result), CENT_STATUS_QUERY_VALUE);
    expect("explained", cent_explain(&bundle, x, columns, &options, &scratch, &result), CENT_STATUS_OK);
    expect("answer-index", cent_result_answer(&result, CENT_MAX_ANSWERS, &answer), CENT_STATUS_INDEX);
    expect("null-answer", cent_result_answer(&result, 0, NULL), CENT_STATUS_NULL_POINTER);
    printf("status unknown: 99 %s\n", cent_status_str(99));
    printf("status negative: -1 %s\n", cent_status_str(-1));
}

int cent_parity_run(const uint8_t *bytes, size_t bytes_len, const uint8_t *queries, size_t queries_len) {
    CentBundleInfo info;
    CentStatus status;
    size_t columns, n;

    if (cent_bundle_size() != sizeof(CentBundle) || cent_scratch_size() != sizeof(CentScratch) ||
        cent_result_size() != sizeof(CentResult)) {
        printf("error: cent.h does not match the library's storage sizes\n");
        return 1;
    }
    status = cent_bundle_open(&bundle, bytes, bytes_len);
    if (status != CENT_STATUS_OK) {
        printf("error: bundle: %s\n", cent_status_str(status));
        return 1;
    }
    columns = queries_len >= 4 ? le32(queries) : 0;
    if (cent_bundle_info(&bundle, &info) != CENT_STATUS_OK || columns != info.columns || columns > CENT_MAX_COLUMNS ||
        (queries_len - 4) % (columns * 4) != 0) {
        printf("error: queries do not match the bundle\n");
        return 1;
    }
    n = (queries_len - 4) / (columns * 4);

    /* The firmware protocol: query i with seed i and the default options. */
    for (size_t i = 0; i < n; i++) {
        CentOptions options = cent_options_default();
        memcpy(row, queries + 4 + i * columns * 4, columns * 4);
        options.seed = i;
        status = cent_explain(&bundle, row, columns, &options, &scratch, &result);
        print_line("", i, status);
    }
    printf("done queries=%u\n", (unsigned)n);

    /* Constraints and costs: the first two features frozen, two answers, costs rising with
     * the feature index, another seed. */
    for (size_t i = 0; i < n && i < 8; i++) {
        float costs[CENT_MAX_FEATURES];
        CentOptions options = cent_options_default();
        for (uint32_t j = 0; j < info.features; j++)
            costs[j] = 1.0f + 0.25f * (float)j;
        options.answers = 2;
        options.seed = 1000 + i;
        options.max_search = 20;
        options.immutable = 0x3;
        options.costs = costs;
        options.costs_len = info.features;
        memcpy(row, queries + 4 + i * columns * 4, columns * 4);
        status = cent_explain(&bundle, row, columns, &options, &scratch, &result);
        print_line("c ", i, status);
    }

    memcpy(values, queries + 4, columns * 4);
    refusals(values, columns);
    printf("failures=%d\n", failures);
    return failures == 0 ? 0 : 1;
}
