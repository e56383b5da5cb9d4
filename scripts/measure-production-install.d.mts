/** The image's production install flags (`npm <flags>`); see measure-production-install.mjs. */
export declare const IMAGE_INSTALL: ReadonlyArray<string>
