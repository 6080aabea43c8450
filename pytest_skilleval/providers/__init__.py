"""Model providers: chat (judges, classifiers) and embeddings, behind two small interfaces."""
