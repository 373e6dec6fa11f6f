/* placeholder: being written (simcuda cuDNN stand-in). */
typedef int simcudnn_kernel_names_placeholder;
