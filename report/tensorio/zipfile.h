/* Zip archives of tensors: PyTorch checkpoints (torch.save since 1.6: a zip
 * of data.pkl, a pickle naming each tensor's storage, dtype, offset, shape
 * and strides, and one stored member per storage) and NumPy .npz archives
 * (np.savez: one .npy member per array).
 *
 * Only stored (uncompressed) members are read, as both writers store them
 * (np.savez_compressed deflates: refused with a message); an archive naming
 * a member twice (neither writer does) is refused. The pickle is read
 * by a small interpreter of the opcodes torch.save writes that builds plain
 * data (dicts, lists, tuples, strings, numbers) and tensors; it never imports
 * or calls anything: a GLOBAL is a name, and REDUCE of a name it does not
 * know is an opaque object whose arguments and state are still searched for
 * tensors. Every check that can fail on a hostile file fails with a one-line
 * message (the fuzz target in tests/fuzz holds the reader to it). */
#ifndef MPPROF_REPORT_TENSORIO_ZIPFILE_H
#define MPPROF_REPORT_TENSORIO_ZIPFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "report/tensorio/npy.h"

/* What the tensors a pickle names may take in memory: one entry and one name
 * per path to a tensor, and a pickle can name one tensor along many paths,
 * each name as long as the keys it joins. At most this many bytes per byte
 * of the file, and the floor whatever its size; beyond, the file is refused. */
#define MPPROF_ZIP_NAMES_MEM_PER_FILE_BYTE 64
#define MPPROF_ZIP_NAMES_MEM_MIN (64u << 20)

/* Does a file start as a zip archive does (a local file header, or the end
 * record of an archive of no members)? */
bool mpprof_zip_sniff(const void *head, size_t len);

/* Does a file start as torch.save's legacy format does (before PyTorch 1.6,
 * or _use_new_zipfile_serialization=False): a pickle of torch's magic number?
 * That format is not read; this names it. */
bool mpprof_zip_torch_legacy_sniff(const void *head, size_t len);

/* Parse a torch.save or .npz image in memory; the tensors point into buf.
 * Tensors are named by their path in the saved object, '.'-joined (dict keys,
 * list indices; a module's _parameters/_buffers/_modules levels left out, so
 * torch.save(model) names them as its state_dict does: a tied weight or a
 * shared submodule under each of its names), .npz members by their name
 * without ".npy". 0, or -1 with the problem in err. */
int mpprof_zip_parse(const void *buf, size_t len, mpprof_tensor_set *ret, char *err, size_t errlen);

/* Map a file and parse it: 0, or -1 with "PATH: problem" in err. */
int mpprof_zip_open(const char *path, mpprof_tensor_set *ret, char *err, size_t errlen);

#endif
