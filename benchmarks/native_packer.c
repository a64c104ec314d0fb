/* A measurement, not part of hloscope: hloscope's best_fit (hloscope/analysis/heap/best_fit.py,
   XLA's GlobalDecreasingSizeBestFitHeap) ported to C with the same structure, to measure what
   a compiled packer would give (benchmarks/native_packer.py compiles and runs it). Two segment
   trees of merged flat range lists over the time ranks; the upper half of each leaf's path
   kept merged at the middle depth; holes found from the starts and the ends each sorted (here
   merged list by list, the lists being sorted). Groups come in packing order; offsets are in
   units of the alignment; returns the heap's bytes, or -1 once it reaches `limit` (< 0: none). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct { int64_t *a; int64_t len, cap; } Vec;

static void push(Vec *v, int64_t x) {
    if (v->len == v->cap) { v->cap = v->cap ? 2 * v->cap : 8; v->a = realloc(v->a, sizeof(int64_t) * v->cap); }
    v->a[v->len++] = x;
}
static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}
static int64_t lower(const int64_t *a, int64_t lo, int64_t hi, int64_t x) { /* bisect_left */
    while (lo < hi) { int64_t m = (lo + hi) >> 1; if (a[m] < x) lo = m + 1; else hi = m; } return lo;
}
static int64_t upper_b(const int64_t *a, int64_t lo, int64_t hi, int64_t x) { /* bisect_right */
    while (lo < hi) { int64_t m = (lo + hi) >> 1; if (x < a[m]) hi = m; else lo = m + 1; } return lo;
}

/* S, E: scratch of room >= total/2 each. Fills S and E sorted from the flat lists. */
static int64_t *tmp_s, *tmp_e; static int64_t tmp_cap;
/* S and E of the flat lists, each sorted: every list is merged into what came before. */
static int64_t gather(Vec **lists, int64_t nl, Vec *S, Vec *E) {
    int64_t total = 0;
    for (int64_t k = 0; k < nl; k++) total += lists[k]->len / 2;
    if (S->cap < total) { S->cap = E->cap = total; S->a = realloc(S->a, 8 * total); E->a = realloc(E->a, 8 * total); }
    if (tmp_cap < total) { tmp_cap = total; tmp_s = realloc(tmp_s, 8 * total); tmp_e = realloc(tmp_e, 8 * total); }
    int64_t m = 0;
    for (int64_t k = 0; k < nl; k++) {
        const int64_t *a = lists[k]->a; int64_t n = lists[k]->len / 2;
        /* merge S[0:m] with a's starts into tmp, then back */
        int64_t i = 0, j = 0, o = 0;
        while (i < m && j < n) tmp_s[o++] = S->a[i] <= a[2 * j] ? S->a[i++] : a[2 * (j++)];
        while (i < m) tmp_s[o++] = S->a[i++];
        while (j < n) tmp_s[o++] = a[2 * (j++)];
        i = 0; j = 0; o = 0;
        while (i < m && j < n) tmp_e[o++] = E->a[i] <= a[2 * j + 1] ? E->a[i++] : a[2 * (j++) + 1];
        while (i < m) tmp_e[o++] = E->a[i++];
        while (j < n) tmp_e[o++] = a[2 * (j++) + 1];
        m += n;
        memcpy(S->a, tmp_s, 8 * m); memcpy(E->a, tmp_e, 8 * m);
    }
    S->len = E->len = m;
    return m;
}

static void union_into(Vec **lists, int64_t nl, Vec *out, Vec *S, Vec *E) {
    out->len = 0;
    int64_t m = gather(lists, nl, S, E);
    if (!m) return;
    push(out, S->a[0]);
    for (int64_t i = 0; i + 1 < m; i++)
        if (E->a[i] < S->a[i + 1]) { push(out, E->a[i]); push(out, S->a[i + 1]); }
    push(out, E->a[m - 1]);
}

int64_t best_fit(int64_t n, const int64_t *size_units, const int64_t *sizes, const int64_t *iv_start,
                 const int64_t *ivs, int64_t alignment, int64_t limit, int64_t *offsets) {
    int64_t nivs = iv_start[n];
    int64_t *points = malloc(sizeof(int64_t) * (2 * nivs + 1));
    memcpy(points, ivs, sizeof(int64_t) * 2 * nivs);
    qsort(points, 2 * nivs, sizeof(int64_t), cmp_i64);
    int64_t np = 0;
    for (int64_t i = 0; i < 2 * nivs; i++) if (!np || points[np - 1] != points[i]) points[np++] = points[i];
    int64_t leaves = 1, depth = 0;
    while (leaves < np + 1) { leaves *= 2; depth++; }
    Vec *trees = calloc(4 * leaves, sizeof(Vec));
    int64_t starts_at = 2 * leaves;
    int64_t below = depth - depth / 2, middle = (int64_t)1 << (depth / 2);
    Vec *up = calloc(2 * middle, sizeof(Vec));
    char *up_ok = calloc(2 * middle, 1);
    Vec S = {0}, E = {0};
    Vec **lists = malloc(sizeof(Vec *) * 256); int64_t lists_cap = 256;
    int64_t *targets = malloc(sizeof(int64_t) * 1024); int64_t targets_cap = 1024;
    int64_t heap = 0, result = 0;
    for (int64_t g = 0; g < n; g++) {
        int64_t size = size_units[g], nl = 0;
        for (int64_t q = iv_start[g]; q < iv_start[g + 1]; q++) {
            int64_t a = lower(points, 0, np, ivs[2 * q]) + leaves, b = lower(points, 0, np, ivs[2 * q + 1]) + leaves;
            int64_t node = a, top = a >> below;
            if (nl + 3 * depth + 4 > lists_cap) { lists_cap *= 2; lists = realloc(lists, sizeof(Vec *) * lists_cap); }
            while (node > top) { if (trees[node].len) lists[nl++] = &trees[node]; node >>= 1; }
            if (!up_ok[top]) {
                Vec *path[128]; int64_t npth = 0;
                for (int64_t k = top; k; k >>= 1) if (trees[k].len) path[npth++] = &trees[k];
                union_into(path, npth, &up[top], &S, &E);
                up_ok[top] = 1;
            }
            if (up[top].len) lists[nl++] = &up[top];
            int64_t lo = a + 1, hi = b + 1;
            while (lo < hi) {
                if (lo & 1) { if (trees[lo + starts_at].len) lists[nl++] = &trees[lo + starts_at]; lo++; }
                if (hi & 1) { hi--; if (trees[hi + starts_at].len) lists[nl++] = &trees[hi + starts_at]; }
                lo >>= 1; hi >>= 1;
            }
        }
        int64_t best_off = -1;
        if (!nl) best_off = 0;
        else {
            int64_t m = gather(lists, nl, &S, &E);
            int64_t best_gap = S.a[0];
            if (best_gap >= size) best_off = 0;
            if (best_gap != size) {
                for (int64_t i = 0; i + 1 < m; i++) {
                    if (E.a[i] < S.a[i + 1]) {
                        int64_t gap = S.a[i + 1] - E.a[i];
                        if (gap >= size && (best_off < 0 || gap < best_gap)) {
                            best_off = E.a[i]; best_gap = gap;
                            if (gap == size) break;
                        }
                    }
                }
            }
            if (best_off < 0) best_off = E.a[m - 1];
        }
        offsets[g] = best_off;
        int64_t x = best_off, y = best_off + size, nt = 0;
        for (int64_t q = iv_start[g]; q < iv_start[g + 1]; q++) {
            int64_t a = lower(points, 0, np, ivs[2 * q]) + leaves, b = lower(points, 0, np, ivs[2 * q + 1]) + leaves;
            if (nt + 4 * depth + 8 > targets_cap) { targets_cap *= 2; targets = realloc(targets, sizeof(int64_t) * targets_cap); }
            int64_t lo = a, hi = b + 1;
            while (lo < hi) {
                if (lo & 1) { targets[nt++] = lo; lo++; }
                if (hi & 1) { hi--; targets[nt++] = hi; }
                lo >>= 1; hi >>= 1;
            }
            for (int64_t node = a; node; node >>= 1) targets[nt++] = node + starts_at;
        }
        for (int64_t t = 0; t < nt; t++) {
            int64_t k = targets[t];
            if (k < 2 * middle) {
                int kb = 0, mb = 0; for (int64_t v = k; v; v >>= 1) kb++; for (int64_t v = middle; v; v >>= 1) mb++;
                int64_t shift = mb - kb, first = k << shift;
                memset(up_ok + first, 0, (size_t)1 << shift);
            }
            Vec *r = &trees[k];
            if (!r->len) { push(r, x); push(r, y); continue; }
            int64_t i = lower(r->a, 0, r->len, x) & ~(int64_t)1;
            int64_t j = (upper_b(r->a, i, r->len, y) + 1) & ~(int64_t)1;
            if (i == j) {
                push(r, 0); push(r, 0);
                memmove(r->a + i + 2, r->a + i, sizeof(int64_t) * (r->len - 2 - i));
                r->a[i] = x; r->a[i + 1] = y;
            } else {
                int64_t s = r->a[i] < x ? r->a[i] : x, e = r->a[j - 1] > y ? r->a[j - 1] : y;
                r->a[i] = s; r->a[i + 1] = e;
                memmove(r->a + i + 2, r->a + j, sizeof(int64_t) * (r->len - j));
                r->len -= (j - i - 2);
            }
        }
        int64_t topb = best_off * alignment + sizes[g];
        if (topb > heap) { heap = topb; if (limit >= 0 && heap >= limit) { result = -1; break; } }
    }
    if (result == 0) result = heap;
    for (int64_t k = 0; k < 4 * leaves; k++) free(trees[k].a);
    for (int64_t k = 0; k < 2 * middle; k++) free(up[k].a);
    free(trees); free(up); free(up_ok); free(S.a); free(E.a); free(lists); free(targets); free(points);
    free(tmp_s); free(tmp_e); tmp_s = tmp_e = NULL; tmp_cap = 0;
    return result;
}
