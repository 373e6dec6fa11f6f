/* placeholder: being written (simcuda cuDNN stand-in). */
typedef int simcudnn_cudnn_core_placeholder;
