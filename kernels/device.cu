/* Every kernel libmpprof.so carries, as one module of its embedded fatbin
 * (kernels/meson.build): the device scan and the shadow execution kernels. */
#include "scan.cu"
#include "shadow.cu"
