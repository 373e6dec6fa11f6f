/* dlsym / dlvsym interposition. Programs that dlopen the CUDA libraries and
 * look their entry points up on the library's own handle (TensorFlow,
 * XLA/JAX, cudnn-frontend built with dynamic loading), with or without
 * RTLD_DEEPBIND, never reach a preloaded definition: the lookup searches that
 * library's scope only. libmpprof therefore exports dlsym and dlvsym. A
 * lookup on a handle of libcublas, libcublasLt, libcudnn or libcupti (the
 * `hooked` table) of a name mpprof hooks returns the hook, and the hook
 * forwards to that handle's symbol (mpp_sym_adopt). Every other lookup is the
 * C library's; mpprof's own lookups on these handles call the C library's
 * dlsym directly (mpp_real_dlsym): they must get the library's function.
 *
 * RTLD_NEXT and RTLD_DEFAULT lookups depend on the caller's address, so they
 * reach the C library's function by a tail jump that keeps the caller's
 * return address (x86-64 assembly below; elsewhere nothing is interposed).
 * The C library's functions are found in its own symbol table
 * (dl_iterate_phdr + GNU hash), never through dlsym, which is this file. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "mpp.h"
#include "profiler/runtime.h"

#if defined(__x86_64__) && defined(__linux__)

typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlvsym_fn)(void *, const char *, const char *);

/* Read by the trampolines; set once (the same value by any racing thread). */
__attribute__((visibility("hidden"))) dlsym_fn mpp_real_dlsym_ptr;
__attribute__((visibility("hidden"))) dlvsym_fn mpp_real_dlvsym_ptr;

/* The resolver runs inside the first dlsym call of the process, which may be
 * a sanitizer runtime's own, made before that runtime is initialised
 * (AddressSanitizer looks up the functions it intercepts): nothing on this
 * path may be instrumented or call an intercepted function (dl_iterate_phdr,
 * strcmp, strlen). The loaded objects are walked through the dynamic
 * linker's r_debug list; strings are compared by hand. */
#define MPP_RAW_CODE                                                                               \
  __attribute__((no_sanitize_address, no_sanitize_thread, no_sanitize_undefined, noinline))

MPP_RAW_CODE static uint32_t gnu_hash(const char *s) {
  uint32_t h = 5381;
  for (; *s; s++)
    h = h * 33 + (unsigned char)*s;
  return h;
}

MPP_RAW_CODE static bool same(const char *a, const char *b) {
  for (; *a && *a == *b; a++, b++)
    ;
  return *a == *b;
}

MPP_RAW_CODE static bool ends_with(const char *s, const char *tail) {
  const char *e = s, *t = tail;
  while (*e)
    e++;
  while (*t)
    t++;
  while (t > tail && e > s && *--t == *--e)
    ;
  return t == tail && e >= s && *t == *e;
}

/* A pointer from the dynamic section: glibc relocates most in place; an
 * unrelocated one is below the load address. */
MPP_RAW_CODE static uintptr_t dyn_ptr(ElfW(Addr) base, ElfW(Addr) p) {
  return p < base ? base + p : p;
}

/* `name` (a function) in the dynamic symbol table of the object loaded at
 * base with dynamic section dyn, through its GNU hash table. */
MPP_RAW_CODE static void *lookup_in(ElfW(Addr) base, const ElfW(Dyn) * dyn, const char *name) {
  if (!dyn) return NULL;
  const ElfW(Sym) *symtab = NULL;
  const char *strtab = NULL;
  const uint32_t *gh = NULL;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    if (dyn->d_tag == DT_SYMTAB) symtab = (const ElfW(Sym) *)dyn_ptr(base, dyn->d_un.d_ptr);
    if (dyn->d_tag == DT_STRTAB) strtab = (const char *)dyn_ptr(base, dyn->d_un.d_ptr);
    if (dyn->d_tag == DT_GNU_HASH) gh = (const uint32_t *)dyn_ptr(base, dyn->d_un.d_ptr);
  }
  if (!symtab || !strtab || !gh) return NULL;
  uint32_t nbuckets = gh[0], symoffset = gh[1], bloom_size = gh[2];
  if (nbuckets == 0) return NULL;
  const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(gh + 4) + bloom_size);
  const uint32_t *chain = buckets + nbuckets;
  uint32_t h = gnu_hash(name);
  uint32_t i = buckets[h % nbuckets];
  if (i < symoffset) return NULL;
  for (;; i++) {
    uint32_t ch = chain[i - symoffset];
    const ElfW(Sym) *s = &symtab[i];
    if ((ch | 1) == (h | 1) && s->st_shndx != SHN_UNDEF && s->st_value != 0 &&
        ELF64_ST_TYPE(s->st_info) == STT_FUNC && same(strtab + s->st_name, name))
      return (void *)(base + s->st_value);
    if (ch & 1) return NULL;
  }
}

/* libc.so.6 defines dlsym since glibc 2.34; libdl.so.2 before. */
MPP_RAW_CODE static void *find_libc(const char *name) {
  for (const struct link_map *m = _r_debug.r_map; m; m = m->l_next) {
    if (!m->l_name || (!ends_with(m->l_name, "/libc.so.6") && !ends_with(m->l_name, "/libdl.so.2")))
      continue;
    void *f = lookup_in(m->l_addr, m->l_ld, name);
    if (f) return f;
  }
  return NULL;
}

static void *no_dlsym(void *h, const char *n) {
  (void)h, (void)n;
  return NULL;
}

static void *no_dlvsym(void *h, const char *n, const char *v) {
  (void)h, (void)n, (void)v;
  return NULL;
}

/* Called by the trampolines before the first forward (also from a
 * constructor that runs before mpprof's). Never fails: without the C
 * library's functions every lookup answers NULL, as dlsym does on error. */
__attribute__((visibility("hidden"))) MPP_RAW_CODE void mpp_dlsym_resolve(void) {
  dlsym_fn s = (dlsym_fn)find_libc("dlsym");
  dlvsym_fn v = (dlvsym_fn)find_libc("dlvsym");
  __atomic_store_n(&mpp_real_dlvsym_ptr, v ? v : no_dlvsym, __ATOMIC_RELEASE);
  __atomic_store_n(&mpp_real_dlsym_ptr, s ? s : no_dlsym, __ATOMIC_RELEASE);
}

static void *mpp_dlsym_real(void *handle, const char *name);

/* mpprof looks symbols up on libraries' handles (the runtime's real symbols,
 * gpu/'s libcupti functions) with the C library's dlsym: handed over to core
 * here (mpp_real_dlsym), so no module needs anything of this file. */
__attribute__((constructor(101))) static void dlsym_init(void) {
  if (!mpp_real_dlsym_ptr) mpp_dlsym_resolve();
  mpp_set_real_dlsym(mpp_dlsym_real);
}

static void *mpp_dlsym_real(void *handle, const char *name) {
  if (!__atomic_load_n(&mpp_real_dlsym_ptr, __ATOMIC_ACQUIRE)) mpp_dlsym_resolve();
  return mpp_real_dlsym_ptr(handle, name);
}

/* The libraries whose entry points mpprof hooks, by the start of their file
 * name, and the start of the names looked up on their handles that may be
 * hooks (which names are: mpp_sym_adopt, from the hook modules' tables). A
 * lookup on a handle also searches the library's dependencies: libcublas's
 * finds libcublasLt's functions. */
static const struct {
  const char *library;
  const char *names;
} hooked[] = {
    {"libcublas.so", "cublas"},
    {"libcublasLt.so", "cublas"},
    {"libcudnn.so", "cudnn"},
    {"libcupti.so", "cupti"},
};
#define NHOOKED (sizeof hooked / sizeof hooked[0])

static bool starts_with(const char *s, const char *head) {
  return !strncmp(s, head, strlen(head));
}

/* Is `name`, looked up on this handle, one of mpprof's hooked libraries'? */
static bool hooked_lookup(void *handle, const char *name) {
  size_t i = 0;
  while (i < NHOOKED && !starts_with(name, hooked[i].names))
    i++;
  if (i == NHOOKED) return false; /* most lookups end here, without dlinfo */
  struct link_map *lm = NULL;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name) return false;
  const char *base = strrchr(lm->l_name, '/');
  base = base ? base + 1 : lm->l_name;
  for (; i < NHOOKED; i++)
    if (starts_with(name, hooked[i].names) && starts_with(base, hooked[i].library)) return true;
  return false;
}

/* mpprof's own definition of a hooked name (libmpprof's handle, found once). */
static void *own_definition(const char *name) {
  static void *self;
  void *h = __atomic_load_n(&self, __ATOMIC_ACQUIRE);
  if (!h) {
    Dl_info di;
    if (!dladdr((void *)&own_definition, &di) || !di.dli_fname) return NULL;
    h = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return NULL;
    __atomic_store_n(&self, h, __ATOMIC_RELEASE); /* a racing thread's reference is harmless */
  }
  return mpp_real_dlsym_ptr(h, name);
}

/* A lookup on an explicit handle; `real` is what the C library answered. */
static void *redirect(void *handle, const char *name, void *real) {
  if (!real || !name || mpp_cfg.disabled) return real;
  if (!hooked_lookup(handle, name) || !mpp_sym_adopt(name, real)) return real;
  void *hook = own_definition(name);
  return hook ? hook : real;
}

__attribute__((visibility("hidden"))) void *mpp_dlsym_handle(void *handle, const char *name) {
  return redirect(handle, name, mpp_real_dlsym_ptr(handle, name));
}

__attribute__((visibility("hidden"))) void *mpp_dlvsym_handle(void *handle, const char *name,
                                                              const char *version) {
  return redirect(handle, name, mpp_real_dlvsym_ptr(handle, name, version));
}

/* dlclose: the C library's. When it unloaded something, the real symbols
 * that pointed into it are forgotten (mpp_sym_forget_unloaded): a hook
 * would otherwise call a library the program unloaded and loaded again
 * elsewhere (mpp_sym_adopt keeps the first address it is given). Only
 * dlclose unloads, and it is never on a hot path. */
typedef int (*dlclose_fn)(void *);
static dlclose_fn real_dlclose_ptr; /* atomic; racing threads store the same value */

static int loader_subs_cb(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  *(unsigned long long *)data = info->dlpi_subs;
  return 1;
}

static unsigned long long loader_subs(void) {
  unsigned long long subs = 0;
  dl_iterate_phdr(loader_subs_cb, &subs);
  return subs;
}

MPP_EXPORT int dlclose(void *handle) {
  dlclose_fn f = __atomic_load_n(&real_dlclose_ptr, __ATOMIC_ACQUIRE);
  if (!f) {
    f = (dlclose_fn)find_libc("dlclose");
    if (!f) return -1; /* no C library's dlclose: nothing was closed */
    __atomic_store_n(&real_dlclose_ptr, f, __ATOMIC_RELEASE);
  }
  unsigned long long before = loader_subs();
  int rc = f(handle);
  if (rc == 0 && loader_subs() != before) {
    int e = errno;
    mpp_sym_forget_unloaded();
    errno = e;
  }
  return rc;
}

/* dlsym(handle, name): RTLD_DEFAULT (0) and RTLD_NEXT (-1) jump to the C
 * library's dlsym with the caller's return address in place; other handles
 * go to mpp_dlsym_handle, which returns to the caller itself. The same for
 * dlvsym with its third argument. The resolver call keeps rdi/rsi/rdx and a
 * 16-byte aligned stack. */
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        "  cmpq $0, mpp_real_dlsym_ptr(%rip)\n"
        "  jne 1f\n"
        "  pushq %rdi\n"
        "  pushq %rsi\n"
        "  subq $8, %rsp\n"
        "  call mpp_dlsym_resolve\n"
        "  addq $8, %rsp\n"
        "  popq %rsi\n"
        "  popq %rdi\n"
        "1:\n"
        "  testq %rdi, %rdi\n"
        "  je 2f\n"
        "  cmpq $-1, %rdi\n"
        "  je 2f\n"
        "  jmp mpp_dlsym_handle\n"
        "2:\n"
        "  jmp *mpp_real_dlsym_ptr(%rip)\n"
        ".size dlsym, .-dlsym\n"
        ".globl dlvsym\n"
        ".type dlvsym, @function\n"
        "dlvsym:\n"
        "  cmpq $0, mpp_real_dlvsym_ptr(%rip)\n"
        "  jne 1f\n"
        "  pushq %rdi\n"
        "  pushq %rsi\n"
        "  pushq %rdx\n"
        "  call mpp_dlsym_resolve\n"
        "  popq %rdx\n"
        "  popq %rsi\n"
        "  popq %rdi\n"
        "1:\n"
        "  testq %rdi, %rdi\n"
        "  je 2f\n"
        "  cmpq $-1, %rdi\n"
        "  je 2f\n"
        "  jmp mpp_dlvsym_handle\n"
        "2:\n"
        "  jmp *mpp_real_dlvsym_ptr(%rip)\n"
        ".size dlvsym, .-dlvsym\n");

#else
/* No dlsym of libmpprof's own here: the runtime's plain dlsym is the C library's. */
#endif
