/* SPDX-License-Identifier: MIT */
/*
 * Enumerate every binary tree with n nodes through nested generators, as in
 * the C++20 example of the "usched" posts: gen(n) yields, for each split i, every
 * left tree of gen(i) combined with every right tree of gen(n - 1 - i). The
 * number of trees is the n-th Catalan number.
 *
 *   catalan N [--print] [--copystack]
 *
 * Trees share subtrees, so nodes are reference counted. Each yielded value is
 * a heap pointer, never the address of a generator's local, which keeps the
 * example valid for copy-stack generators too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <baton/gen.h>

#include "catalan.h"

struct tree {
	struct tree *left, *right;
	long refs;
};

static struct baton_coro_attr gen_attr = BATON_CORO_ATTR_INIT;

static struct tree *tree_ref(struct tree *t)
{
	if (t)
		t->refs++;
	return t;
}

static void tree_unref(struct tree *t)
{
	if (t && --t->refs == 0) {
		tree_unref(t->left);
		tree_unref(t->right);
		free(t);
	}
}

static struct tree *tree_new(struct tree *l, struct tree *r)
{
	struct tree *t = malloc(sizeof(*t));

	if (t == NULL) {
		perror("catalan: malloc");
		exit(1);
	}
	t->left = tree_ref(l);
	t->right = tree_ref(r);
	t->refs = 1;
	return t;
}

static void print_tree(const struct tree *t, FILE *out)
{
	if (t == NULL) {
		fputc('*', out);
		return;
	}
	fputc('[', out);
	print_tree(t->left, out);
	fputc(' ', out);
	print_tree(t->right, out);
	fputc(']', out);
}

static void must(int rc, const char *what)
{
	if (rc != BATON_OK) {
		fprintf(stderr, "catalan: %s: %s\n", what, baton_strerror(rc));
		exit(1);
	}
}

static void gen_trees(baton_gen_t *g, void *arg);

static baton_gen_t *trees(long n)
{
	baton_gen_t *g;

	must(baton_gen_create(&g, &gen_attr, gen_trees, (void *)n), "create");
	return g;
}

/* Yields struct tree * (NULL is the empty tree); the consumer owns one
 * reference to each non-empty tree it receives. */
static void gen_trees(baton_gen_t *g, void *arg)
{
	long n = (long)arg;
	void *l, *r;

	if (n == 0) {
		must(baton_gen_yield(g, NULL), "yield");
		return;
	}
	for (long i = 0; i < n; i++) {
		baton_gen_t *left = trees(i);

		while (baton_gen_next(left, &l) == BATON_OK) {
			baton_gen_t *right = trees(n - 1 - i);

			while (baton_gen_next(right, &r) == BATON_OK) {
				must(baton_gen_yield(g, tree_new(l, r)), "yield");
				tree_unref(r);
			}
			must(baton_gen_destroy(right), "destroy");
			tree_unref(l);
		}
		must(baton_gen_destroy(left), "destroy");
	}
}

long catalan_count(long n, enum baton_coro_model model, FILE *print)
{
	baton_gen_t *g;
	void *t;
	long count = 0;

	gen_attr.model = model;
	/* Copy-stack generators run on the shared stack: no size of their own. */
	gen_attr.stack_size = model == BATON_CORO_STACKFUL ? BATON_CORO_STACK_MIN : 0;
	g = trees(n);
	while (baton_gen_next(g, &t) == BATON_OK) {
		if (print) {
			print_tree(t, print);
			fputc('\n', print);
		}
		tree_unref(t);
		count++;
	}
	must(baton_gen_destroy(g), "destroy");
	return count;
}

#ifndef CATALAN_NO_MAIN
int main(int argc, char **argv)
{
	enum baton_coro_model model = BATON_CORO_STACKFUL;
	int print = 0;
	long n = -1;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--print") == 0)
			print = 1;
		else if (strcmp(argv[i], "--copystack") == 0)
			model = BATON_CORO_COPYSTACK;
		else
			n = strtol(argv[i], NULL, 10);
	}
	if (n < 0 || n > 30) {
		fprintf(stderr, "usage: catalan N [--print] [--copystack]  (0 <= N <= 30)\n");
		return 2;
	}
	printf("%ld\n", catalan_count(n, model, print ? stdout : NULL));
	return 0;
}
#endif
