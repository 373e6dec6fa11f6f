/* placeholder: being written (simcuda cuDNN stand-in). */
typedef int simcudnn_conv_compute_placeholder;
