/* main.h -- vgpu-webhook's two commands: serving (main.c) and `certs`
 * (certs_main.c). */
#ifndef VG_WH_MAIN_H
#define VG_WH_MAIN_H

#ifndef VGPU_VERSION
#define VGPU_VERSION "unknown"
#endif

int vg_wh_certs_main(int argc, char **argv);

#endif
