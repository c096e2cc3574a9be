/*
 * cuda_module.c -- modules and functions from PTX text.
 *
 * The simulator cannot run code, but it can tell a program which kernels a
 * module has: cuModuleLoadData accepts a PTX image (text that declares
 * .version and .target; anything else, including cubin/fatbin binaries, is
 * CUDA_ERROR_INVALID_IMAGE) and finds every ".entry NAME" in it, with or
 * without ".visible". cuModuleGetFunction hands out one function handle per
 * entry; launching it costs simulated time (cuda_launch.c). A module belongs
 * to the context current at load time and dies with it.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

/* ELF (cubin) and fatbin magics, as bytes; compared byte by byte with
 * short-circuit so a short text image is never read past its NUL. */
static const unsigned char g_elf_magic[4] = {0x7f, 'E', 'L', 'F'};
static const unsigned char g_fatbin_magic[4] = {0x50, 0xED, 0x55, 0xBA}; /* 0xBA55ED50 */

struct CUfunc_st {
  struct cu_obj obj; /* ctx NULL: functions die with their module */
  struct CUmod_st *module;
  char *name;
};

struct CUmod_st {
  struct cu_obj obj;
  size_t nfuncs;
  struct CUfunc_st **funcs;
};

static bool is_ident_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '$'; }

static bool has_magic(const unsigned char *p, const unsigned char magic[4]) {
  for (int i = 0; i < 4; i++)
    if (p[i] != magic[i]) return false;
  return true;
}

static bool is_binary_image(const void *image) {
  return has_magic(image, g_elf_magic) || has_magic(image, g_fatbin_magic);
}

static void free_module(struct CUmod_st *m) {
  for (size_t i = 0; i < m->nfuncs; i++) {
    cu_handle_del(m->funcs[i]);
    free(m->funcs[i]->name);
    free(m->funcs[i]);
  }
  free(m->funcs);
  free(m);
}

static bool add_function(struct CUmod_st *m, const char *name, size_t len) {
  for (size_t i = 0; i < m->nfuncs; i++)
    if (strlen(m->funcs[i]->name) == len && memcmp(m->funcs[i]->name, name, len) == 0) return true;
  struct CUfunc_st **grown = realloc(m->funcs, (m->nfuncs + 1) * sizeof(*grown));
  if (grown == NULL) return false;
  m->funcs = grown;
  struct CUfunc_st *f = calloc(1, sizeof(*f));
  if (f == NULL || (f->name = strndup(name, len)) == NULL) {
    free(f);
    return false;
  }
  f->obj.kind = CU_OBJ_FUNCTION;
  f->module = m;
  m->funcs[m->nfuncs++] = f;
  return true;
}

/* Finds every ".entry NAME" in the PTX text. */
static bool scan_entries(struct CUmod_st *m, const char *ptx) {
  for (const char *p = strstr(ptx, ".entry"); p != NULL; p = strstr(p + 6, ".entry")) {
    bool starts_word = p == ptx || isspace((unsigned char)p[-1]);
    if (!starts_word || !isspace((unsigned char)p[6])) continue;
    const char *name = p + 6;
    while (isspace((unsigned char)*name)) name++;
    size_t len = 0;
    while (is_ident_char(name[len])) len++;
    if (len > 0 && !add_function(m, name, len)) return false;
  }
  return true;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  struct CUctx_st *ctx;
  CUresult rc = cu_current(&ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (module == NULL || image == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (is_binary_image(image)) return CUDA_ERROR_INVALID_IMAGE;
  const char *ptx = image;
  if (strstr(ptx, ".version") == NULL || strstr(ptx, ".target") == NULL)
    return CUDA_ERROR_INVALID_IMAGE;
  struct CUmod_st *m = calloc(1, sizeof(*m));
  if (m == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  m->obj = (struct cu_obj){CU_OBJ_MODULE, ctx};
  if (!scan_entries(m, ptx)) {
    free_module(m);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < m->nfuncs; i++) cu_handle_add(m->funcs[i]);
  cu_handle_add(m);
  *module = m;
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (hfunc == NULL || name == NULL) return CUDA_ERROR_INVALID_VALUE;
  struct CUmod_st *m = cu_handle_get(hmod, CU_OBJ_MODULE);
  if (m == NULL) return CUDA_ERROR_INVALID_HANDLE;
  for (size_t i = 0; i < m->nfuncs; i++) {
    if (strcmp(m->funcs[i]->name, name) != 0) continue;
    *hfunc = m->funcs[i];
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_FOUND;
}

void cu_module_destroy(struct cu_obj *obj) {
  if (cu_handle_take(obj, CU_OBJ_MODULE) != NULL) free_module((struct CUmod_st *)obj);
}

CUresult cuModuleUnload(CUmodule hmod) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  struct CUmod_st *m = cu_handle_take(hmod, CU_OBJ_MODULE);
  if (m == NULL) return CUDA_ERROR_INVALID_HANDLE;
  free_module(m);
  return CUDA_SUCCESS;
}

CUresult cu_function_ctx(CUfunction f, struct CUctx_st **ctx) {
  struct CUfunc_st *fn = cu_handle_get(f, CU_OBJ_FUNCTION);
  if (fn == NULL) return CUDA_ERROR_INVALID_HANDLE;
  *ctx = fn->module->obj.ctx;
  return cu_ctx_check(*ctx);
}
