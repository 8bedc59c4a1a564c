/* SPDX-License-Identifier: MIT */
/*
 * bindings/lua/baton_lua.c - a lua_State behind a baton call sequencer
 * (baton_lua.h). Every function here packs its request into a struct on the
 * caller's stack and runs a small trampoline on the sequencer's stack; the
 * trampolines are the only code that touches the lua_State.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "lua_internal.h"

/* A copy of a Lua string (or a C string) as a value the caller owns. */
int baton__lua_set_string(struct baton_lua_value *v, const char *p, size_t len)
{
	char *copy = malloc(len + 1);

	if (copy == NULL)
		return BATON_ENOMEM;
	memcpy(copy, p, len);
	copy[len] = '\0';
	v->type = BATON_LUA_STRING;
	v->u.s.ptr = copy;
	v->u.s.len = len;
	return BATON_OK;
}

/* The error message on top of the stack into *v (if any); pops it. */
static int take_error(lua_State *L, struct baton_lua_value *v)
{
	size_t len = 0;
	const char *msg = lua_tolstring(L, -1, &len);

	if (v != NULL) {
		if (msg == NULL)
			msg = "(error object is not a string)", len = strlen(msg);
		baton__lua_set_string(v, msg, len);
	}
	lua_pop(L, 1);
	return BATON_LUA_ERROR;
}

/*
 * The allocator. Without BATON_LUA_ACCOUNT it is Lua's own (realloc and
 * free) plus a count of the bytes held. With it every block carries a
 * 16-byte header naming the account of the run that allocated (or last
 * grew) it, so that a run's budget is measured on what its own blocks hold,
 * whatever the other runs' slices allocate and the collector frees in
 * between. Freeing never fails, nor does shrinking; growth is refused (NULL)
 * when it would take the account charged now over its budget: Lua then
 * collects everything it can (an emergency full GC, whose frees are
 * credited to their owners) and asks again, and raises "not enough
 * memory" if it is still refused. All of it runs on the sequencer's stack.
 */
struct mem_hdr {
	uint32_t slot, gen;
	uint64_t pad; /* keeps the block 16-aligned, as malloc's are */
};

/* One writer (the stack's holder); baton_lua_memory reads it anywhere. */
static void count(struct baton_lua *bl, size_t add, size_t sub)
{
	__atomic_store_n(&bl->mem_total, bl->mem_total + add - sub, __ATOMIC_RELAXED);
}

static void *plain_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct baton_lua *bl = ud;
	void *p;

	if (ptr == NULL)
		osize = 0; /* a type tag, not a size */
	if (nsize == 0) {
		free(ptr);
		count(bl, 0, osize);
		return NULL;
	}
	p = realloc(ptr, nsize);
	if (p != NULL)
		count(bl, nsize, osize);
	return p;
}

static void credit(struct baton_lua *bl, const struct mem_hdr *h, size_t n)
{
	struct baton_lua_account *a;

	if (h->slot == 0 || h->slot >= bl->nacct)
		return;
	a = &bl->acct[h->slot];
	if (a->gen == h->gen)
		a->live = a->live > n ? a->live - n : 0;
}

static void *account_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct baton_lua *bl = ud;
	struct mem_hdr *h = ptr ? (struct mem_hdr *)ptr - 1 : NULL, old;
	struct baton_lua_account *a = bl->cur ? &bl->acct[bl->cur] : NULL;
	size_t held;

	if (h == NULL)
		osize = 0;
	if (nsize == 0) {
		if (h != NULL) {
			credit(bl, h, osize);
			count(bl, 0, osize);
			free(h);
		}
		return NULL;
	}
	if (nsize > SIZE_MAX - sizeof(*h))
		return NULL;
	if (h != NULL)
		old = *h;
	else
		old.slot = 0, old.gen = 0;
	/* What the charged account would hold with this block grown. */
	if (a != NULL && a->budget != 0 && nsize > osize) {
		held = a->live -
			(h != NULL && old.slot == bl->cur && old.gen == a->gen ? osize : 0);
		if (held + nsize > a->budget) {
			a->refused = true;
			return NULL;
		}
	}
	h = realloc(h, nsize + sizeof(*h));
	if (h == NULL)
		return NULL;
	count(bl, nsize, osize);
	if (ptr != NULL)
		credit(bl, &old, osize);
	if (a != NULL) { /* who allocates or grows it holds it */
		h->slot = bl->cur;
		h->gen = a->gen;
		a->live += nsize;
		if (a->live > a->peak)
			a->peak = a->live;
	} else if (ptr != NULL) { /* outside a run: it stays with its owner */
		*h = old;
		if (old.slot != 0 && old.slot < bl->nacct && bl->acct[old.slot].gen == old.gen)
			bl->acct[old.slot].live += nsize;
	} else {
		h->slot = 0;
		h->gen = 0;
	}
	return h + 1;
}

uint32_t baton__lua_account_open(struct baton_lua *bl, size_t budget)
{
	struct baton_lua_account *a;
	uint32_t slot;

	if (!(bl->flags & BATON_LUA_ACCOUNT))
		return 0;
	if (bl->acct_free != 0) {
		slot = bl->acct_free;
		bl->acct_free = bl->acct[slot].next;
	} else {
		if (bl->nacct == bl->acct_cap) {
			uint32_t cap = bl->acct_cap ? bl->acct_cap * 2 : 16;
			/* The table is plain memory, not Lua's: no account of
			 * its own, and the allocator reads it. */
			a = realloc(bl->acct, cap * sizeof(*a));
			if (a == NULL)
				return 0;
			memset(a + bl->acct_cap, 0, (cap - bl->acct_cap) * sizeof(*a));
			bl->acct = a;
			bl->acct_cap = cap;
			if (bl->nacct == 0)
				bl->nacct = 1; /* slot 0 is nobody's */
		}
		slot = bl->nacct++;
	}
	a = &bl->acct[slot];
	a->live = a->peak = 0;
	a->budget = budget;
	a->refused = false;
	a->next = 0;
	return slot;
}

void baton__lua_account_close(struct baton_lua *bl, uint32_t slot, size_t *peak, bool *refused)
{
	struct baton_lua_account *a;

	if (slot == 0 || slot >= bl->nacct)
		return;
	a = &bl->acct[slot];
	if (peak)
		*peak = a->peak;
	if (refused)
		*refused = a->refused;
	a->gen++; /* its blocks are nobody's from now on */
	a->live = 0;
	a->next = bl->acct_free;
	bl->acct_free = slot;
	if (bl->cur == slot)
		bl->cur = 0;
}

/* luaL_newstate's panic and warning functions (static in lauxlib), for a
 * state made with lua_newstate. */
static int panic(lua_State *L)
{
	const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;

	fprintf(stderr, "PANIC: unprotected error in call to Lua API (%s)\n",
		msg ? msg : "error object is not a string");
	fflush(stderr);
	return 0; /* Lua aborts */
}

static void warn(void *ud, const char *msg, int tocont)
{
	struct baton_lua *bl = ud;

	if (!bl->warn_cont && !tocont && msg[0] == '@') { /* a control message */
		if (strcmp(msg, "@on") == 0)
			bl->warn_on = true;
		else if (strcmp(msg, "@off") == 0)
			bl->warn_on = false;
		return;
	}
	if (bl->warn_on) {
		if (!bl->warn_cont)
			fputs("Lua warning: ", stderr);
		fputs(msg, stderr);
		if (!tocont)
			fputs("\n", stderr);
		fflush(stderr);
	}
	bl->warn_cont = tocont != 0;
}

static void *open_state(void *arg)
{
	struct baton_lua *bl = arg;

	bl->L = lua_newstate(bl->flags & BATON_LUA_ACCOUNT ? account_alloc : plain_alloc, bl);
	if (bl->L == NULL) {
		bl->open_rc = BATON_ENOMEM;
		return NULL;
	}
	lua_atpanic(bl->L, panic);
	lua_setwarnf(bl->L, warn, bl);
	luaL_openlibs(bl->L);
	/* The main thread's extra space is what new threads copy: no run. */
	*(void **)lua_getextraspace(bl->L) = NULL;
	lua_pushcfunction(bl->L, baton__lua_open_lib);
	lua_pushlightuserdata(bl->L, bl);
	if (lua_pcall(bl->L, 1, 0, 0) != LUA_OK) {
		lua_close(bl->L);
		bl->L = NULL;
		bl->open_rc = BATON_ENOMEM;
		return NULL;
	}
	bl->open_rc = BATON_OK;
	return NULL;
}

int baton_lua_create(baton_lua_t **out, const struct baton_seq_attr *attr)
{
	return baton_lua_create_ex(out, attr, 0);
}

int baton_lua_create_ex(baton_lua_t **out, const struct baton_seq_attr *attr, unsigned flags)
{
	struct baton_seq_attr a = BATON_SEQ_ATTR_INIT;
	struct baton_lua *bl;
	int rc;

	if (out == NULL || (attr != NULL && attr->init != NULL) || (flags & ~BATON_LUA_ACCOUNT))
		return BATON_EINVAL;
	if (attr != NULL)
		a = *attr;
	if (a.name == NULL)
		a.name = "lua";
	bl = calloc(1, sizeof(*bl));
	if (bl == NULL)
		return BATON_ENOMEM;
	bl->flags = flags;
	if ((rc = baton__lua_bg_init(bl)) != BATON_OK) {
		free(bl);
		return rc;
	}
	a.init = open_state;
	a.init_arg = bl;
	rc = baton_seq_create(&bl->seq, &a);
	if (rc == BATON_OK && bl->open_rc != BATON_OK) {
		baton_seq_destroy(bl->seq);
		rc = bl->open_rc;
	}
	if (rc != BATON_OK) {
		baton__lua_bg_destroy(bl);
		free(bl);
		return rc;
	}
	*out = bl;
	return BATON_OK;
}

size_t baton_lua_memory(const baton_lua_t *bl)
{
	return bl ? __atomic_load_n(&bl->mem_total, __ATOMIC_RELAXED) : 0;
}

struct call_req {
	struct baton_lua *bl;
	const char *name;
	const struct baton_lua_value *args;
	int nargs;
	struct baton_lua_value *result;
	int rc;
};

static void push_value(lua_State *L, const struct baton_lua_value *v)
{
	switch (v->type) {
	case BATON_LUA_INTEGER:
		lua_pushinteger(L, (lua_Integer)v->u.i);
		break;
	case BATON_LUA_NUMBER:
		lua_pushnumber(L, v->u.n);
		break;
	case BATON_LUA_STRING:
		lua_pushlstring(L, v->u.s.ptr ? v->u.s.ptr : "", v->u.s.ptr ? v->u.s.len : 0);
		break;
	case BATON_LUA_BOOLEAN:
		lua_pushboolean(L, v->u.b);
		break;
	default:
		lua_pushnil(L);
		break;
	}
}

/* Convert the value on top of the stack into *v and pop it. */
static int pop_result(lua_State *L, struct baton_lua_value *v)
{
	int rc = BATON_OK;

	if (v == NULL) {
		lua_pop(L, 1);
		return BATON_OK;
	}
	switch (lua_type(L, -1)) {
	case LUA_TNIL:
		v->type = BATON_LUA_NIL;
		break;
	case LUA_TBOOLEAN:
		v->type = BATON_LUA_BOOLEAN;
		v->u.b = lua_toboolean(L, -1);
		break;
	case LUA_TNUMBER:
		if (lua_isinteger(L, -1)) {
			v->type = BATON_LUA_INTEGER;
			v->u.i = (long long)lua_tointeger(L, -1);
		} else {
			v->type = BATON_LUA_NUMBER;
			v->u.n = (double)lua_tonumber(L, -1);
		}
		break;
	case LUA_TSTRING: {
		size_t len;
		const char *p = lua_tolstring(L, -1, &len);

		rc = baton__lua_set_string(v, p, len);
		break;
	}
	default: {
		const char *tn = luaL_typename(L, -1); /* a static name */

		lua_pop(L, 1);
		lua_pushfstring(L, "baton_lua_call: a %s result cannot be returned to C", tn);
		return take_error(L, v);
	}
	}
	lua_pop(L, 1);
	return rc;
}

static void *do_call(void *arg)
{
	struct call_req *r = arg;
	lua_State *L = r->bl->L;

	if (!lua_checkstack(L, r->nargs + 2)) {
		lua_pushstring(L, "baton_lua_call: too many arguments");
		r->rc = take_error(L, r->result);
		return NULL;
	}
	if (lua_getglobal(L, r->name) != LUA_TFUNCTION) {
		lua_pop(L, 1);
		lua_pushfstring(L, "baton_lua_call: no global function '%s'", r->name);
		r->rc = take_error(L, r->result);
		return NULL;
	}
	for (int i = 0; i < r->nargs; i++)
		push_value(L, &r->args[i]);
	if (lua_pcall(L, r->nargs, 1, 0) != LUA_OK)
		r->rc = take_error(L, r->result);
	else
		r->rc = pop_result(L, r->result);
	return NULL;
}

int baton_lua_call(baton_lua_t *bl, const char *name, const struct baton_lua_value *args, int nargs,
		   struct baton_lua_value *result)
{
	struct call_req r = { bl, name, args, nargs, result, BATON_OK };
	int rc;

	if (bl == NULL || name == NULL || nargs < 0 || (nargs > 0 && args == NULL))
		return BATON_EINVAL;
	if (result)
		result->type = BATON_LUA_NIL;
	rc = baton_seq_call(bl->seq, do_call, &r, NULL);
	return rc != BATON_OK ? rc : r.rc;
}

struct chunk_req {
	struct baton_lua *bl;
	const char *text;
	int is_file;
	struct baton_lua_value *err;
	int rc;
};

static void *do_chunk(void *arg)
{
	struct chunk_req *r = arg;
	lua_State *L = r->bl->L;
	int st = r->is_file ? luaL_loadfile(L, r->text) : luaL_loadstring(L, r->text);

	if (st == LUA_OK)
		st = lua_pcall(L, 0, 0, 0);
	r->rc = st == LUA_OK ? BATON_OK : take_error(L, r->err);
	return NULL;
}

static int chunk(baton_lua_t *bl, const char *text, int is_file, struct baton_lua_value *err)
{
	struct chunk_req r = { bl, text, is_file, err, BATON_OK };
	int rc;

	if (bl == NULL || text == NULL)
		return BATON_EINVAL;
	if (err)
		err->type = BATON_LUA_NIL;
	rc = baton_seq_call(bl->seq, do_chunk, &r, NULL);
	return rc != BATON_OK ? rc : r.rc;
}

int baton_lua_dostring(baton_lua_t *bl, const char *code, struct baton_lua_value *err)
{
	return chunk(bl, code, 0, err);
}

int baton_lua_dofile(baton_lua_t *bl, const char *path, struct baton_lua_value *err)
{
	return chunk(bl, path, 1, err);
}

struct with_req {
	struct baton_lua *bl;
	void *(*fn)(lua_State *L, void *arg);
	void *arg;
};

static void *do_with(void *arg)
{
	struct with_req *r = arg;

	return r->fn(r->bl->L, r->arg);
}

int baton_lua_with(baton_lua_t *bl, void *(*fn)(struct lua_State *L, void *arg), void *arg,
		   void **result)
{
	struct with_req r = { bl, fn, arg };

	if (bl == NULL || fn == NULL)
		return BATON_EINVAL;
	return baton_seq_call(bl->seq, do_with, &r, result);
}

baton_seq_t *baton_lua_seq(baton_lua_t *bl)
{
	return bl ? bl->seq : NULL;
}

void baton_lua_value_clear(struct baton_lua_value *v)
{
	if (v == NULL)
		return;
	if (v->type == BATON_LUA_STRING)
		free((void *)v->u.s.ptr);
	v->type = BATON_LUA_NIL;
}

static void *do_close(void *arg)
{
	struct baton_lua *bl = arg;

	lua_close(bl->L);
	bl->L = NULL;
	return NULL;
}

int baton_lua_destroy(baton_lua_t *bl)
{
	int rc;

	if (bl == NULL)
		return BATON_OK;
	if (baton_seq_on_stack(bl->seq))
		return BATON_EBUSY;
	/* Its background tasks first: they use the state. */
	rc = baton_lua_cancel_tasks(bl, 1);
	if (rc != BATON_OK)
		return rc;
	if (!baton__lua_bg_quiet(bl))
		return BATON_EBUSY;
	rc = baton_seq_call(bl->seq, do_close, bl, NULL);
	if (rc != BATON_OK)
		return rc;
	rc = baton_seq_destroy(bl->seq);
	if (rc != BATON_OK)
		return rc;
	free(bl->acct);
	baton__lua_bg_destroy(bl);
	free(bl);
	return BATON_OK;
}
